package fleet

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/fleet/etcdmeta"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// A reap's dry run fails what its run cannot sweep for a refusal no mode
// gives (root's run too): an orphan temp that is immutable (its unlink's
// EPERM) and an emptied key dir that is immutable (its rmdir's EPERM),
// each its key's failure, swept by neither. Before this was asked, a
// dry run that took the orphan's or the empty dir's leave for granted
// said it would sweep them, exit 0, where the run failed the keys
// (mutnew47's mutants of shared.RemoveErr and of the dry run's sweep).
// The run says what its dry run says, the attribute named: it said only
// the kernel's "operation not permitted".
func TestFleetReapDryRunFailsAnImmutableOrphanAndEmptyKeyDirAsTheRun(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("root is needed for chattr")
	}
	f := newFixture(t, etcdtest.Start1(t))
	emptied := store.Key("github", "immutable", "emptied")
	f.now = time.Now().Add(-30 * 24 * time.Hour)
	f.run(emptied, "e")
	held := store.Key("github", "immutable", "held")
	f.now = time.Now().Add(-5 * time.Hour)
	f.run(held, "h")
	f.now = time.Time{}
	if r, err := f.b.Reap(t.Context(), ReapOptions{TTL: 14 * 24 * time.Hour}); err != nil || !slices.Equal(r.Removed, []string{emptied}) {
		t.Fatalf("reap = %+v, %v; want %s removed, its dir left empty", r, err, emptied)
	}
	orphan := filepath.Join(f.dir, held, ".tmp-0123456789abcdef")
	if err := os.WriteFile(orphan, []byte("died"), 0o600); err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(-4 * time.Hour)
	if err := os.Chtimes(orphan, at, at); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{orphan, filepath.Join(f.dir, emptied)} {
		if out, err := exec.Command("chattr", "+i", p).CombinedOutput(); err != nil {
			t.Skipf("chattr +i %s: %v: %s (ext4, xfs or btrfs is needed)", p, err, out)
		}
		t.Cleanup(func() { exec.Command("chattr", "-i", p).Run() })
	}
	later := func() time.Time { return time.Now().Add(2 * time.Hour) }
	said := map[string]string{}
	for _, dry := range []bool{true, false} {
		r, err := f.b.Reap(t.Context(), ReapOptions{DryRun: dry, Now: later})
		if err != nil || len(r.Swept) != 0 || len(r.Skipped) != 2 {
			t.Fatalf("reap (dry %v) = %+v, %v; want nothing swept, both keys failed", dry, r, err)
		}
		for _, k := range []string{emptied, held} {
			if err := r.Skipped[k]; !errors.Is(err, unix.EPERM) || !strings.Contains(err.Error(), "immutable") {
				t.Errorf("reap (dry %v): %s: %v; want EPERM, naming the attribute", dry, k, err)
			}
			if w, ok := said[k]; ok && w != r.Skipped[k].Error() {
				t.Errorf("%s: the dry run said %q, the run %q; want its words", k, w, r.Skipped[k])
			}
			said[k] = r.Skipped[k].Error()
		}
	}
	for _, p := range []string{orphan, filepath.Join(f.dir, emptied)} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s: %v; want it left", p, err)
		}
	}
}

// A record that names another key's file (foreign input) is reaped
// without that file, which its run never unlinks: its dry run asks
// nothing of it either, though it is immutable, and both remove the key,
// failing nothing. A dry run that asked the unlink of any file a record
// names survived every test (mutnew47's P04): it failed a key its run
// removes cleanly.
func TestFleetReapDryRunAsksNothingOfAnotherKeysFileARecordNames(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("root is needed for chattr")
	}
	f := newFixture(t, etcdtest.Start1(t))
	victim, hostile := store.Key("github", "hostile", "victim"), store.Key("github", "hostile", "rogue")
	f.run(victim, "one")
	own := f.recordFile(victim)
	old := time.Now().Add(-30 * 24 * time.Hour).UnixNano()
	rec := etcdmeta.Record{Transcript: &etcdmeta.Transcript{Gen: 1, Size: 1, PromotedAt: old, File: own}}
	if _, err := f.b.meta.Put(t.Context(), hostile, 0, rec, etcdmeta.HistoryEntry{Gen: 1, At: old}); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(f.dir, own)
	if out, err := exec.Command("chattr", "+i", p).CombinedOutput(); err != nil {
		t.Skipf("chattr +i %s: %v: %s (ext4, xfs or btrfs is needed)", p, err, out)
	}
	t.Cleanup(func() { exec.Command("chattr", "-i", p).Run() })
	for _, dry := range []bool{true, false} {
		r, err := f.b.Reap(t.Context(), ReapOptions{DryRun: dry, TTL: 14 * 24 * time.Hour})
		if err != nil || !slices.Equal(r.Removed, []string{hostile}) || len(r.Skipped) != 0 {
			t.Fatalf("reap (dry %v) = %+v, %v; want the hostile key removed, nothing failed", dry, r, err)
		}
	}
	f.holds(victim, "one", 1)
}

// An orphan in a key dir that is itself immutable: its unlink meets
// EPERM as an immutable file's does, and the dry run and the run fail the
// key in the same words, which name the attribute, as fleet.md says of an
// immutable dir. They said only "access …/.: operation not permitted",
// the mode check's answer, which the attribute refuses before any bit.
func TestFleetReapNamesAnImmutableKeyDirThatRefusesItsOrphansUnlink(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("root is needed for chattr")
	}
	f := newFixture(t, etcdtest.Start1(t))
	held := store.Key("github", "immutable", "held dir")
	f.now = time.Now().Add(-5 * time.Hour)
	f.run(held, "h")
	f.now = time.Time{}
	orphan := filepath.Join(f.dir, held, ".tmp-0123456789abcdef")
	if err := os.WriteFile(orphan, []byte("died"), 0o600); err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(-4 * time.Hour)
	if err := os.Chtimes(orphan, at, at); err != nil {
		t.Fatal(err)
	}
	kd := filepath.Join(f.dir, held)
	if out, err := exec.Command("chattr", "+i", kd).CombinedOutput(); err != nil {
		t.Skipf("chattr +i %s: %v: %s (ext4, xfs or btrfs is needed)", kd, err, out)
	}
	t.Cleanup(func() { exec.Command("chattr", "-i", kd).Run() })
	later := func() time.Time { return time.Now().Add(2 * time.Hour) }
	said := ""
	for _, dry := range []bool{true, false} {
		r, err := f.b.Reap(t.Context(), ReapOptions{DryRun: dry, Now: later})
		if err != nil || len(r.Swept) != 0 || len(r.Skipped) != 1 {
			t.Fatalf("reap (dry %v) = %+v, %v; want nothing swept, the key failed", dry, r, err)
		}
		err = r.Skipped[held]
		if !errors.Is(err, unix.EPERM) || !strings.Contains(fmt.Sprint(err), "immutable") {
			t.Errorf("reap (dry %v): %s: %v; want EPERM, naming the attribute", dry, held, err)
		}
		if said != "" && said != fmt.Sprint(err) {
			t.Errorf("the dry run said %q, the run %q; want its words", said, err)
		}
		said = fmt.Sprint(err)
	}
	if _, err := os.Lstat(orphan); err != nil {
		t.Errorf("%s: %v; want it left", orphan, err)
	}
}
