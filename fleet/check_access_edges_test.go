package fleet

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"sessdb/fleet/shared"
	"sessdb/store"
)

// What the fleet needs of each entry of its transcripts dir, in its
// owner's place, is judged as such, and named so: the dir and a key dir
// rwx (one 0300 its owner may not read, one 0600 it may not enter, made
// 0700), the mark and a generation r only (0400 is no finding: no worker
// writes either once made). An owner finding's advice names the dir's
// uid, then its gid (65534:54322, where the two differ).
func TestCheckJudgesWhatTheFleetNeedsOfEachEntry(t *testing.T) {
	unread := store.Key("github", "check-access-edges", "unread")
	unentered := store.Key("github", "check-access-edges", "unentered")
	readOnly := store.Key("github", "check-access-edges", "read-only generation")
	rootsKey := store.Key("github", "check-access-edges", "root's")
	f := workersFleet(t, 54322, unread, unentered, readOnly, rootsKey)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	rootsGen := f.genOf(rootsKey)
	must(os.Chown(filepath.Join(f.dir, rootsGen), 0, 0))
	must(os.Chmod(filepath.Join(f.dir, f.genOf(readOnly)), 0o400))
	must(os.Chmod(filepath.Join(f.dir, shared.MarkName), 0o400))
	must(os.Chmod(filepath.Join(f.dir, unread), 0o300))
	must(os.Chmod(filepath.Join(f.dir, unentered), 0o600))
	must(os.Chmod(f.dir, 0o600))
	t.Cleanup(func() {
		os.Chmod(f.dir, 0o700)
		os.Chmod(filepath.Join(f.dir, unread), 0o700)
		os.Chmod(filepath.Join(f.dir, unentered), 0o700)
	})
	want := map[string]string{
		".":       "mode: mode 0600: its owner may not enter the transcripts dir (sessdb makes it 0700)",
		unread:    "mode: mode 0300: its owner may not read the key dir (sessdb makes it 0700)",
		unentered: "mode: mode 0600: its owner may not enter the key dir (sessdb makes it 0700)",
		rootsGen:  "owner: owned by uid 0, where the transcripts dir is uid 65534's, who may not read the generation; that user's workers fail their promotions or resolves (as root, once it is known to be the fleet's: chown 65534:54322)",
	}
	seen := map[string]string{}
	if _, err := f.b.Check(t.Context(), CheckOptions{}, func(fd store.Finding) error {
		if fd.Kind == store.KindMode || fd.Kind == store.KindOwner {
			seen[fd.Path] = string(fd.Kind) + ": " + fd.Detail
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for p, w := range want {
		if got, ok := seen[p]; !ok || !strings.HasPrefix(got, w) {
			t.Errorf("%s: %q; want %q", p, got, w)
		}
	}
	for p, got := range seen {
		if _, ok := want[p]; !ok {
			t.Errorf("%s: %q; want no mode or owner finding (the fleet can use it)", p, got)
		}
	}
}

// --repair gives a mode its owner's bits only on the dir's owner's own
// entry: a key dir found lacking them (0500) and swapped, before the
// repair, for a directory root owns that lacks them too is left as it is
// ("not the owner's"), not given the bits.
func TestCheckRepairGivesNoBitsToAnotherUsersDirSwappedIn(t *testing.T) {
	key := store.Key("github", "check-access-edges", "swapped")
	f := workersFleet(t, worker, key)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Chmod(filepath.Join(f.dir, key), 0o500))
	elsewhere := t.TempDir()
	roots := filepath.Join(elsewhere, "root's")
	must(os.Mkdir(roots, 0o700))
	must(os.Chmod(roots, 0o500))
	t.Cleanup(func() {
		os.Chmod(filepath.Join(f.dir, key), 0o700)
		os.Chmod(filepath.Join(elsewhere, "key"), 0o700)
	})
	f.b.hook = func(p, k string) error {
		if p == hookCheckDir && k == key {
			// The dir's owner, between check's look and its repair.
			os.Rename(filepath.Join(f.dir, key), filepath.Join(elsewhere, "key"))
			os.Rename(roots, filepath.Join(f.dir, key))
		}
		return nil
	}
	defer func() { f.b.hook = nil }()
	var got *store.Finding
	if _, err := f.b.Check(t.Context(), CheckOptions{Repair: true}, func(fd store.Finding) error {
		if fd.Path == key && fd.Kind == store.KindMode {
			got = &fd
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got == nil || got.Repaired || !strings.Contains(got.Repair, "not the owner's directory or file") {
		t.Errorf("the key dir's mode finding after the swap: %+v; want it left, not the owner's", got)
	}
	var st unix.Stat_t
	must(unix.Lstat(filepath.Join(f.dir, key), &st))
	if st.Uid != 0 || st.Mode&0o7777 != 0o500 {
		t.Errorf("root's dir swapped in at the key's name: uid %d, mode %04o; want root's, 0500 as it was", st.Uid, st.Mode&0o7777)
	}
}

// Only a mark that is a regular file is judged for its mode: a FIFO at
// the mark's name, mode 0000, is no mark of the owner's that lacks its
// read bit (what else check says of it is not this test's).
func TestCheckJudgesTheModeOfARegularMarkOnly(t *testing.T) {
	key := store.Key("github", "check-access-edges", "fifo mark")
	f := workersFleet(t, worker, key)
	mark := filepath.Join(f.dir, shared.MarkName)
	if err := os.Remove(mark); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(mark, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(mark, worker, worker); err != nil {
		t.Fatal(err)
	}
	var seen []string
	if _, err := f.b.Check(t.Context(), CheckOptions{}, func(fd store.Finding) error {
		if fd.Path == shared.MarkName {
			seen = append(seen, string(fd.Kind)+": "+fd.Detail)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, s := range seen {
		if strings.HasPrefix(s, "mode: ") || strings.HasPrefix(s, "owner: ") {
			t.Errorf("a FIFO at the mark's name: %q; want no mode or owner finding", s)
		}
	}
}
