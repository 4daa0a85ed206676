package migrate

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"sessdb/internal/faults"
)

// A legacy entry whose lstat fails otherwise than "gone" (an I/O error,
// the kernel out of memory) says nothing about the key: the key fails,
// named, and nothing in it changes, whichever entry it was. It was taken
// for absent: a legacy worker's lock went unseen and the key was migrated
// under it, a resume chain was recorded as none and its file removed, a
// transcript was recorded as missing.
func TestALegacyEntryNotLookedAtFailsTheKey(t *testing.T) {
	root := filepath.Join(t.TempDir(), "sessions")
	key := "0123456789abcdef0123456789abcdef"
	dir := filepath.Join(root, key)
	must(t, os.MkdirAll(dir, 0o700))
	for name, v := range map[string]string{"current.jsonl": "{}\n", "venue": "local", "pi-version": "0.58.3", "resume-chain": "3", "lock": ""} {
		must(t, os.WriteFile(filepath.Join(dir, name), []byte(v), 0o600))
	}
	before := treeState(t, root, true, true)

	t.Cleanup(func() { faults.Set(nil) })
	looks := 0
	faults.Set(func(p faults.Point) error {
		if p == faults.MigrateScanLstat {
			looks++
		}
		return nil
	})
	got, _ := migrate(t, root, false, testOpts())
	if r := got[key]; r.Action != Locked || looks < 5 {
		t.Fatalf("the key, looked at: %s (%q) after %d looks; want %s after one look at each entry", r.Action, r.Cause, looks, Locked)
	}

	for _, back := range []bool{false, true} {
		for failing := 1; failing <= looks; failing++ {
			// The same entry fails at every scan: a run scans the key
			// again under its lock, and the listing's order stays.
			n := 0
			faults.Set(func(p faults.Point) error {
				if p == faults.MigrateScanLstat {
					if n++; (n-1)%looks == failing-1 {
						return syscall.EIO
					}
				}
				return nil
			})
			got, sum := migrate(t, root, back, testOpts())
			r := got[key]
			if r.Action != Failed || sum.Failed != 1 || !strings.Contains(r.Cause, syscall.EIO.Error()) {
				t.Errorf("%s, look %d failing: %s (%q); want the key failed on the lstat's error", direction(back), failing, r.Action, r.Cause)
			}
			if d := diffStates(before, treeState(t, root, true, true)); d != "" {
				t.Fatalf("%s, look %d failing, changed the key:\n%s", direction(back), failing, d)
			}
		}
	}
}

// A legacy sidecar whose read fails on the file (EIO) fails the key,
// named, and nothing in it changes. It was read as the legacy reader reads
// any failure, no value: the key migrated with venue "(pending)", no
// pi-version and chain 0, and its legacy files removed.
func TestALegacySidecarNotReadFailsTheKey(t *testing.T) {
	root := filepath.Join(t.TempDir(), "sessions")
	key := "0123456789abcdef0123456789abcdef"
	dir := filepath.Join(root, key)
	must(t, os.MkdirAll(dir, 0o700))
	for name, v := range map[string]string{"current.jsonl": "{}\n", "venue": "local", "pi-version": "0.58.3", "resume-chain": "3"} {
		must(t, os.WriteFile(filepath.Join(dir, name), []byte(v), 0o600))
	}
	before := treeState(t, root, false, true) // a failed key may have made and removed its meta.db
	t.Cleanup(func() { faults.Set(nil) })
	faults.Set(func(p faults.Point) error {
		if p == faults.LegacySidecarRead {
			return syscall.EIO
		}
		return nil
	})
	got, sum := migrate(t, root, false, testOpts())
	if r := got[key]; r.Action != Failed || sum.Failed != 1 || !strings.Contains(r.Cause, syscall.EIO.Error()) {
		t.Errorf("%s (%q), summary %+v; want the key failed on the read's error", r.Action, r.Cause, sum)
	}
	if d := diffStates(before, treeState(t, root, false, true)); d != "" {
		t.Fatalf("the run changed the key:\n%s", d)
	}
	faults.Set(nil)
	if got, _ := migrate(t, root, false, testOpts()); got[key].Action != Migrated {
		t.Fatalf("the same key, read: %s (%q)", got[key].Action, got[key].Cause)
	}
	if sc, ok := dbValues(t, dir); !ok || sc.Venue == nil || *sc.Venue != "local" || sc.ResumeChain == nil || *sc.ResumeChain != 3 {
		t.Fatalf("migrated: %s", fmtSidecars(sc))
	}
}
