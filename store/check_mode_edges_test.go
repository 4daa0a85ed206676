package store

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/faults"
	"sessdb/store/legacy"
)

// An owner finding's advice names the chown the operator is to run: the
// root's owner's uid, then its group, each in its place (a root of
// 65534:54322, where the two differ).
func TestCheckOwnerAdviceNamesTheRootsUIDThenItsGID(t *testing.T) {
	needRoot(t)
	s, root, _ := newTestStore(t, gates.Bounds{})
	must(t, os.MkdirAll(root, 0o700))
	must(t, os.Chown(root, worker, 54322))
	key := runJobKey(t, s, "advice")
	must(t, os.Chown(filepath.Join(root, key, db.FileName), 0, 0))
	want := "owned by uid 0, where the sessions root is uid 65534's, who may not read or write the meta.db; that user's workers fail their resolves or promotions of the key (as root, once it is known to be the store's: chown 65534:54322)"
	var seen []string
	for _, f := range checkFindings(t, s, CheckOptions{}) {
		if f.Kind == KindOwner {
			seen = append(seen, f.Path+": "+f.Detail)
		}
	}
	if len(seen) != 1 || seen[0] != key+"/"+db.FileName+": "+want {
		t.Fatalf("owner findings %q; want one, %s/%s: %q", seen, key, db.FileName, want)
	}
}

// A legacy sidecar is judged only where a resolve reads it, in a key
// still in the legacy layout: beside meta.db it is ignored (resolve
// ignores it), so a stale one root owns, or one lacking its owner's read
// bit, is no owner or mode finding there.
func TestCheckJudgesNoSidecarBesideMetaDB(t *testing.T) {
	needRoot(t)
	s, root := workersStore(t)
	key := runJobKey(t, s, "sidecar beside meta.db")
	roots := filepath.Join(root, key, legacy.PiVersionName)
	must(t, os.WriteFile(roots, []byte(testPi), 0o600))
	must(t, os.Chown(roots, 0, 0))
	owners := filepath.Join(root, key, legacy.VenueName)
	must(t, os.WriteFile(owners, []byte("local"), 0o600))
	must(t, os.Chown(owners, worker, worker))
	must(t, os.Chmod(owners, 0o200))
	for _, f := range checkFindings(t, s, CheckOptions{}) {
		if f.Kind == KindOwner || f.Kind == KindMode {
			t.Errorf("a sidecar beside meta.db judged: %s: %s: %s; want no owner or mode finding", f.Path, f.Kind, f.Detail)
		}
	}
}

// The sessions root's mode finding names what its owner may not do with
// a directory: a root 0600 is one its owner may not enter.
func TestCheckSaysTheRootsOwnerMayNotEnterIt(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a root its owner may not enter is walked by root alone: run as root to test it")
	}
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJobKey(t, s, "any")
	givenToAWorker(t, root)
	must(t, os.Chmod(root, 0o600))
	t.Cleanup(func() { os.Chmod(root, 0o700) })
	found := checkFindings(t, s, CheckOptions{})
	want := "mode 0600: its owner may not enter the sessions root (sessdb makes it 0700)"
	if len(found) == 0 || found[0].Path != "." || !strings.HasPrefix(found[0].Detail, want) {
		t.Fatalf("findings %+v; want the first the root's, %q", found, want)
	}
}

// --repair gives a mode its owner's bits only on the root's owner's own
// entry: a key dir found lacking them (0500) and swapped, before the
// repair, for a directory root owns that lacks them too is left as it is
// ("not the owner's"), not given the bits.
func TestCheckRepairGivesNoBitsToAnotherUsersDirSwappedIn(t *testing.T) {
	needRoot(t)
	s, root := workersStore(t)
	key := runJobKey(t, s, "swapped")
	givenToAWorker(t, root)
	must(t, os.Chmod(filepath.Join(root, key), 0o500))
	elsewhere := t.TempDir()
	roots := filepath.Join(elsewhere, "root's")
	must(t, os.Mkdir(roots, 0o700))
	must(t, os.Chmod(roots, 0o500))
	t.Cleanup(func() {
		os.Chmod(filepath.Join(root, key), 0o700)
		os.Chmod(filepath.Join(elsewhere, "key"), 0o700)
	})
	var once sync.Once
	faults.Set(func(p faults.Point) error {
		if p == faults.CheckAfterKeyOpen {
			// The root's owner, between check's look and its repair.
			once.Do(func() {
				os.Rename(filepath.Join(root, key), filepath.Join(elsewhere, "key"))
				os.Rename(roots, filepath.Join(root, key))
			})
		}
		return nil
	})
	t.Cleanup(func() { faults.Set(nil) })
	var got *Finding
	for _, f := range checkFindings(t, s, CheckOptions{Repair: true}) {
		if f.Path == key && f.Kind == KindMode {
			got = &f
		}
	}
	if got == nil || got.Repaired || !strings.Contains(got.Repair, "not the owner's directory or file") {
		t.Errorf("the key dir's mode finding after the swap: %+v; want it left, not the owner's", got)
	}
	var st unix.Stat_t
	must(t, unix.Lstat(filepath.Join(root, key), &st))
	if st.Uid != 0 || st.Mode&0o7777 != 0o500 {
		t.Errorf("root's dir swapped in at the key's name: uid %d, mode %04o; want root's, 0500 as it was", st.Uid, st.Mode&0o7777)
	}
}

// A sessions root whose mode --repair could not mend (the chmod refused:
// here an immutable dir, as a file system that cannot chmod) remains a
// problem: not repaired, and counted as remaining.
func TestCheckRepairThatCannotMendTheRootLeavesItAProblem(t *testing.T) {
	needRoot(t)
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJobKey(t, s, "any")
	givenToAWorker(t, root)
	must(t, os.Chmod(root, 0o550))
	if out, err := exec.Command("chattr", "+i", root).CombinedOutput(); err != nil {
		t.Skipf("the root cannot be made immutable here (chattr +i: %v, %s): a chmod that fails is not tested", err, out)
	}
	t.Cleanup(func() {
		exec.Command("chattr", "-i", root).Run()
		os.Chmod(root, 0o700)
	})
	var f *Finding
	sum, err := s.Check(t.Context(), CheckOptions{Repair: true}, func(fd Finding) error {
		if fd.Path == "." {
			f = &fd
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if f == nil || f.Kind != KindMode || f.Repaired || !f.Remains || sum.Remaining != 1 {
		t.Fatalf("--repair of a root 0550 whose chmod is refused: %+v, %d remaining; want its mode, not repaired, remaining, 1", f, sum.Remaining)
	}
}
