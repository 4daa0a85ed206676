package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"

	"sessdb/internal/faults"
	"sessdb/internal/testfs"
	"sessdb/store"
)

// A check --repair whose repair failed (a full disk) exits 1, the fault
// the exit table gives a full disk and an entry the command could not do,
// and names it on stderr; the summary counts it as failed. It exited 3 (a
// problem that remains, as for one check never repairs) with nothing on
// stderr, or, for a notice, 0. Two repairs: a stray temp in a legacy key,
// whose removal needs a meta.db for the lock, on a full tmpfs; a damaged
// meta.db whose move aside fails (ENOSPC at the fault point).
func TestCheckRepairThatFailedIsAFault(t *testing.T) {
	const legacyKey = "efc1ddda39889994198ccddd21905257"
	const damagedKey = "55c5b4543d2fe748d576d4ed795b9167"
	for _, c := range []struct {
		name  string
		setup func(t *testing.T) (root, path string)
	}{
		{"a full disk", func(t *testing.T) (string, string) {
			dir := t.TempDir()
			unmount, err := testfs.SmallFS(dir, 256<<10)
			if err != nil {
				t.Skipf("no small filesystem here: %v", err)
			}
			t.Cleanup(unmount)
			src := copySample(t)
			root := filepath.Join(dir, "sessions")
			if err := os.MkdirAll(filepath.Join(root, legacyKey), 0o700); err != nil {
				t.Fatal(err)
			}
			names, _ := os.ReadDir(filepath.Join(src, legacyKey))
			for _, n := range names {
				b, err := os.ReadFile(filepath.Join(src, legacyKey, n.Name()))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(root, legacyKey, n.Name()), b, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			temp := filepath.Join(root, legacyKey, ".current.jsonl.tmp-5f1e0c3a9b2d4e67")
			if err := os.WriteFile(temp, []byte("x\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			old := time.Now().Add(-3 * time.Hour)
			os.Chtimes(temp, old, old)
			fill, err := os.Create(filepath.Join(dir, "fill"))
			if err != nil {
				t.Fatal(err)
			}
			for buf := make([]byte, 4096); ; {
				if _, err := fill.Write(buf); err != nil {
					break
				}
			}
			fill.Close()
			return root, legacyKey + "/.current.jsonl.tmp-5f1e0c3a9b2d4e67"
		}},
		{"a move aside that failed", func(t *testing.T) (string, string) {
			root := copySample(t)
			if err := os.WriteFile(filepath.Join(root, damagedKey, "meta.db"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
			faults.Set(func(p faults.Point) error {
				if p == faults.RepairBeforeAside {
					return syscall.ENOSPC
				}
				return nil
			})
			t.Cleanup(func() { faults.Set(nil) })
			return root, damagedKey + "/meta.db"
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			atSampleTime(t)
			root, path := c.setup(t)
			code, out, errs := runCLI(t, "check", "--repair", root)
			if code != exitFault || !strings.Contains(errs, path) || !strings.Contains(errs, "no space left on device") || !strings.Contains(out, "1 not repaired") {
				t.Errorf("check --repair whose repair of %s failed: exit %d, stdout %q, stderr %q; want exit 1, the path and the error on stderr, and the summary's \"1 not repaired\"", path, code, out, errs)
			}
			code, out, _ = runCLI(t, "check", "--repair", "--json", root)
			var sum struct{ Summary checkSummary }
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil || code != exitFault || sum.Summary.Failed != 1 {
				t.Errorf("check --repair --json: exit %d, summary %s (%v); want exit 1, failed 1", code, lines[len(lines)-1], err)
			}
		})
	}
}

// On a fleet, etcd's NOSPACE alarm (its disk quota full) refuses the lock
// check --repair takes to remove a key's orphans: the repair removes
// nothing, says "not removed: lock ...", and exits 1, naming the orphan
// on stderr. It exited 0 (an orphan is a notice), as if it had repaired.
func TestFleetCheckRepairUnderNOSPACEIsAFault(t *testing.T) {
	f := startFleet(t)
	key := store.Key("github", "acme/widget", "nospace")
	f.run(t, key, "j1")
	orphan := filepath.Join(f.dir, key, ".tmp-0123456789abcdef")
	if err := os.WriteFile(orphan, []byte("died"), 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-4 * time.Hour)
	os.Chtimes(orphan, old, old)
	cli := f.c.Client(t)
	members, err := cli.MemberList(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	m := etcdserverpb.NewMaintenanceClient(cli.ActiveConnection())
	for _, mem := range members.Members {
		if _, err := m.Alarm(t.Context(), &etcdserverpb.AlarmRequest{Action: etcdserverpb.AlarmRequest_ACTIVATE, MemberID: mem.ID, Alarm: etcdserverpb.AlarmType_NOSPACE}); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errs := runCLI(t, "check", "--repair")
	path := key + "/.tmp-0123456789abcdef"
	if code != exitFault || !strings.Contains(errs, path) || !strings.Contains(errs, "database space exceeded") || !strings.Contains(out, "1 not repaired") {
		t.Errorf("check --repair under NOSPACE: exit %d, stdout %q, stderr %q; want exit 1, the orphan and the alarm's error on stderr, \"1 not repaired\"", code, out, errs)
	}
	if _, err := os.Stat(orphan); err != nil {
		t.Errorf("the orphan: %v; want it left", err)
	}
}
