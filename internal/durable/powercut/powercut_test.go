package powercut

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/internal/durable"
	"sessdb/internal/fsat"
	"sessdb/internal/testfs"
)

// TestMkdirIsTakenBackWithItsContents: a directory made through the
// journal vanishes in a power cut before its parent's fsync, with
// everything in it, fsynced or not; once the parent is fsynced it stays,
// and what is in it is judged by its own fsyncs.
func TestMkdirIsTakenBackWithItsContents(t *testing.T) {
	parent := t.TempDir()
	pd, err := fsat.OpenDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	defer pd.Close()
	j := New()
	made, err := j.Mkdir(pd, "k", 0o700)
	if err != nil || !made {
		t.Fatalf("mkdir: %v %v", made, err)
	}
	if again, err := j.Mkdir(pd, "k", 0o700); err != nil || again {
		t.Fatalf("mkdir of an existing name: made %v, %v", again, err)
	}
	kd, err := fsat.OpenDirAt(pd, "k")
	if err != nil {
		t.Fatal(err)
	}
	defer kd.Close()
	f, err := j.CreateTemp(kd, "f")
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("data")
	if err := j.SyncFile(f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := j.SyncDir(kd); err != nil {
		t.Fatal(err)
	}
	has := func(dir, name string) bool {
		_, err := os.Lstat(filepath.Join(dir, name))
		return err == nil
	}
	for _, im := range j.Images(t, parent) {
		// Only a mode in which the mkdir does not land may take it back.
		if lands := im.Mode != Modes[0].Name && im.Mode != Modes[1].Name; has(im.Dir, "k") != lands || lands && !has(im.Dir, "k/f") {
			t.Errorf("%s: k there %v, k/f there %v (lost: %v)", im.Mode, has(im.Dir, "k"), has(im.Dir, "k/f"), im.Lost)
		}
	}
	if err := j.SyncDir(pd); err != nil {
		t.Fatal(err)
	}
	for _, im := range j.Images(t, parent) {
		if !has(im.Dir, "k/f") {
			t.Errorf("%s: k/f is gone after both dirs were fsynced", im.Mode)
		}
	}
	j.Cut(t)
	if !has(parent, "k/f") {
		t.Error("the cut took back k/f after both dirs were fsynced")
	}
}

// TestDirRenamedAsideAndRemoved: a directory renamed aside (no-replace)
// and emptied and removed there, as a reap does, comes back whole at its
// old name in a cut that lands nothing, is gone in one that lands the
// removals (the rename landed with the removal of its new name), and is
// whole at its new name in one that lands the names only. Once the parent
// is fsynced the directory is gone in every cut: nothing removed inside a
// directory whose removal is durable can come back.
func TestDirRenamedAsideAndRemoved(t *testing.T) {
	parent := t.TempDir()
	if err := os.Mkdir(filepath.Join(parent, "k"), 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(parent, "k", "f"), []byte("data"), 0o600)
	os.WriteFile(filepath.Join(parent, "taken"), nil, 0o600)
	pd, err := fsat.OpenDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	defer pd.Close()
	j := New()
	if err := j.RenameNoReplace(pd, "k", "taken"); !errors.Is(err, unix.EEXIST) {
		t.Fatalf("a no-replace rename over a file: %v", err)
	}
	if err := j.RenameNoReplace(pd, "k", "aside"); err != nil {
		t.Fatal(err)
	}
	ad, err := fsat.OpenDirAt(pd, "aside")
	if err != nil {
		t.Fatal(err)
	}
	defer ad.Close()
	if err := j.Remove(ad, "f"); err != nil {
		t.Fatal(err)
	}
	if err := j.Remove(pd, "aside"); err != nil {
		t.Fatal(err)
	}
	has := func(dir, name string) bool {
		b, err := os.ReadFile(filepath.Join(dir, name))
		return err == nil && string(b) == "data"
	}
	want := map[string][2]bool{ // k/f there, aside/f there
		"nothing-lands":  {true, false},
		"unlinks-land":   {false, false},
		"names-land":     {false, true},
		"all-names-land": {false, false},
	}
	for _, im := range j.Images(t, parent) {
		if got := [2]bool{has(im.Dir, "k/f"), has(im.Dir, "aside/f")}; got != want[im.Mode] {
			t.Errorf("%s: k/f, aside/f there %v, want %v (lost: %v)", im.Mode, got, want[im.Mode], im.Lost)
		}
	}
	if err := j.SyncDir(pd); err != nil {
		t.Fatal(err)
	}
	for _, im := range j.Images(t, parent) {
		if has(im.Dir, "k/f") || has(im.Dir, "aside/f") {
			t.Errorf("%s: the directory's removal was durable, and its file is back (lost: %v)", im.Mode, im.Lost)
		}
	}
}

// TestRenamedDirKeepsItsFilesFsyncState: a file's data not yet fsynced is
// lost at the name its directory was renamed to, and a rename of a
// directory with operations inside it not yet durable is refused (the
// journal could not image both names).
func TestRenamedDirKeepsItsFilesFsyncState(t *testing.T) {
	parent := t.TempDir()
	pd, err := fsat.OpenDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	defer pd.Close()
	// rename renames k, with a file made in it through j, to k2, with the
	// directory fsync before the rename or not.
	rename := func(j *Journal, k string, synced bool) error {
		if err := os.Mkdir(filepath.Join(parent, k), 0o700); err != nil {
			t.Fatal(err)
		}
		kd, err := fsat.OpenDirAt(pd, k)
		if err != nil {
			t.Fatal(err)
		}
		defer kd.Close()
		f, err := j.CreateTemp(kd, "f")
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString("data")
		f.Close()
		if synced {
			if err := j.SyncDir(kd); err != nil {
				t.Fatal(err)
			}
		}
		return j.RenameNoReplace(pd, k, k+"2")
	}
	if err := rename(New(), "a", false); err == nil || !strings.Contains(err.Error(), "cannot image") {
		t.Fatalf("a rename with a create inside not yet durable: %v", err)
	}
	j := New()
	if err := rename(j, "b", true); err != nil {
		t.Fatal(err)
	}
	if err := j.SyncDir(pd); err != nil {
		t.Fatal(err)
	}
	for _, im := range j.Images(t, parent) {
		if b, err := os.ReadFile(filepath.Join(im.Dir, "b2", "f")); err != nil || len(b) != 0 {
			t.Errorf("%s: b2/f holds %q, %v: its data was never fsynced", im.Mode, b, err)
		}
	}
}

// TestDirMadeAgainKeepsItsOwnDebt: a directory removed and made again at
// the same name, with a file created in the new one, fsynced, but the new
// directory not: the parent's fsync makes the removal and the mkdir
// durable, not the file's name in the new directory, which a cut that
// lands nothing in it still takes back. Only what was done inside the
// removed directory before its removal goes with it.
func TestDirMadeAgainKeepsItsOwnDebt(t *testing.T) {
	parent := t.TempDir()
	if err := os.Mkdir(filepath.Join(parent, "k"), 0o700); err != nil {
		t.Fatal(err)
	}
	pd, err := fsat.OpenDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	defer pd.Close()
	j := New()
	if err := j.Remove(pd, "k"); err != nil {
		t.Fatal(err)
	}
	if made, err := j.Mkdir(pd, "k", 0o700); err != nil || !made {
		t.Fatalf("mkdir again: %v %v", made, err)
	}
	kd, err := fsat.OpenDirAt(pd, "k")
	if err != nil {
		t.Fatal(err)
	}
	defer kd.Close()
	f, err := j.CreateTemp(kd, "f")
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("data")
	if err := j.SyncFile(f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := j.SyncDir(pd); err != nil {
		t.Fatal(err)
	}
	for _, im := range j.Images(t, parent) {
		_, err := os.Lstat(filepath.Join(im.Dir, "k", "f"))
		// Only the create in k is still owed: a mode that lands it keeps k/f.
		if lands := im.Mode == "names-land" || im.Mode == "all-names-land"; (err == nil) != lands {
			t.Errorf("%s: k/f there %v, its create not yet durable (lost: %v)", im.Mode, err == nil, im.Lost)
		}
	}
}

// TestLinkThenUnlinkIsTakenBack: a temp given its final name by a link
// and the unlink of the temp (a no-replace rename where the filesystem
// has none), before the directory's fsync, is in each cut what landed of
// the two: the temp alone, both names, neither (the unlink landed, the
// link not: nothing had promised the file yet), or the final name; the
// final name has the temp's fsynced bytes only. After the fsync, the
// final name alone, whole, in every cut.
func TestLinkThenUnlinkIsTakenBack(t *testing.T) {
	parent := t.TempDir()
	pd, err := fsat.OpenDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	defer pd.Close()
	j := New()
	f, err := j.CreateTemp(pd, "tmp")
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("data")
	if err := j.SyncFile(f); err != nil {
		t.Fatal(err)
	}
	f.WriteString(" not fsynced")
	f.Close()
	if err := j.SyncDir(pd); err != nil {
		t.Fatal(err)
	}
	if err := j.Link(pd, "tmp", "final"); err != nil {
		t.Fatal(err)
	}
	if err := j.Link(pd, "tmp", "final"); !errors.Is(err, unix.EEXIST) {
		t.Fatalf("a link onto an existing name: %v, want EEXIST", err)
	}
	if err := j.Unlink(pd, "tmp"); err != nil {
		t.Fatal(err)
	}
	if err := j.Unlink(pd, "tmp"); !errors.Is(err, unix.ENOENT) {
		t.Fatalf("an unlink of a name that is gone: %v, want ENOENT", err)
	}
	read := func(dir, name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return "absent"
		}
		return string(b)
	}
	want := map[string][2]string{ // mode: tmp, final
		"nothing-lands":  {"data", "absent"},
		"unlinks-land":   {"absent", "absent"},
		"names-land":     {"data", "data"},
		"all-names-land": {"absent", "data"},
	}
	ims := j.Images(t, parent)
	if len(ims) != len(want) {
		t.Errorf("%d images, want one for each of %d modes", len(ims), len(want))
	}
	for _, im := range ims {
		if got := [2]string{read(im.Dir, "tmp"), read(im.Dir, "final")}; got != want[im.Mode] {
			t.Errorf("%s: tmp, final = %q, want %q (lost: %v)", im.Mode, got, want[im.Mode], im.Lost)
		}
	}
	if err := j.SyncDir(pd); err != nil {
		t.Fatal(err)
	}
	for _, im := range j.Images(t, parent) {
		if got := [2]string{read(im.Dir, "tmp"), read(im.Dir, "final")}; got != [2]string{"absent", "data"} {
			t.Errorf("%s after the fsync: tmp, final = %q", im.Mode, got)
		}
	}
}

// TestAtomicRenameAndRmdirAreTakenBack: a no-replace rename without its
// fallback goes back, and a removed empty directory comes back, in a cut
// before their directory's fsync, and stay after it; an rmdir of a
// directory that holds something fails and journals nothing.
func TestAtomicRenameAndRmdirAreTakenBack(t *testing.T) {
	parent := t.TempDir()
	for _, d := range []string{"empty", "full"} {
		if err := os.Mkdir(filepath.Join(parent, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(parent, "full", "f"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(parent, "a"), []byte("a"), 0o600); err != nil {
		t.Fatal(err)
	}
	pd, err := fsat.OpenDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	defer pd.Close()
	j := New()
	if err := j.RenameNoReplaceAtomic(pd, "a", "b"); err != nil {
		if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) {
			t.Skipf("no atomic no-replace rename here: %v", err)
		}
		t.Fatal(err)
	}
	if err := j.RenameNoReplaceAtomic(pd, "b", "full"); !errors.Is(err, unix.EEXIST) {
		t.Fatalf("onto an existing name: %v, want EEXIST", err)
	}
	if err := j.Rmdir(pd, "full"); !errors.Is(err, unix.ENOTEMPTY) && !errors.Is(err, unix.EEXIST) {
		t.Fatalf("rmdir of a dir that holds a file: %v, want ENOTEMPTY", err)
	}
	if err := j.Rmdir(pd, "empty"); err != nil {
		t.Fatal(err)
	}
	has := func(dir, name string) bool {
		_, err := os.Lstat(filepath.Join(dir, name))
		return err == nil
	}
	for _, im := range j.Images(t, parent) {
		renamed, removed := im.Mode != "nothing-lands" && im.Mode != "unlinks-land", im.Mode != "nothing-lands" && im.Mode != "names-land"
		if has(im.Dir, "b") != renamed || has(im.Dir, "a") == renamed || has(im.Dir, "empty") == removed || !has(im.Dir, "full/f") {
			t.Errorf("%s: a %v, b %v, empty %v, full/f %v (lost: %v)", im.Mode, has(im.Dir, "a"), has(im.Dir, "b"), has(im.Dir, "empty"), has(im.Dir, "full/f"), im.Lost)
		}
	}
	if err := j.SyncDir(pd); err != nil {
		t.Fatal(err)
	}
	for _, im := range j.Images(t, parent) {
		if has(im.Dir, "a") || !has(im.Dir, "b") || has(im.Dir, "empty") {
			t.Errorf("%s after the fsync: a %v, b %v, empty %v", im.Mode, has(im.Dir, "a"), has(im.Dir, "b"), has(im.Dir, "empty"))
		}
	}
}

// A removal not yet made durable is taken back whole: a file with its
// bytes, its permissions and its mtime, a symbolic link with its target
// (not followed), a FIFO and an empty directory with their modes; a cut
// that brought back a file without its mode, a link as nothing, or a time
// of the cut would let a protocol's test pass on a tree no power cut
// leaves (mutation sweep: capture's and restore's steps deleted or their
// errors dropped, setMtime made nil; the journal's tests removed only
// plain files and directories).
func TestRemovalsAreTakenBackWithTheirKindModeAndTime(t *testing.T) {
	p := t.TempDir()
	d, err := fsat.OpenDir(p)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	at := time.Date(2021, 6, 7, 8, 9, 10, 11, time.UTC)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(p, "f"), []byte("bytes"), 0o600))
	must(os.Chmod(filepath.Join(p, "f"), 0o640))
	must(os.Symlink("elsewhere", filepath.Join(p, "link")))
	must(unix.Mkfifo(filepath.Join(p, "fifo"), 0o620))
	must(os.Mkdir(filepath.Join(p, "dir"), 0o750))
	for _, n := range []string{"f", "link", "fifo", "dir"} {
		must(unix.UtimesNanoAt(unix.AT_FDCWD, filepath.Join(p, n), []unix.Timespec{unix.NsecToTimespec(at.UnixNano()), unix.NsecToTimespec(at.UnixNano())}, unix.AT_SYMLINK_NOFOLLOW))
	}
	modes := map[string]uint32{} // as made, the umask applied
	for _, n := range []string{"f", "link", "fifo", "dir"} {
		var st unix.Stat_t
		must(unix.Lstat(filepath.Join(p, n), &st))
		modes[n] = uint32(st.Mode)
	}
	if modes["f"] != unix.S_IFREG|0o640 {
		t.Fatalf("f made with mode %o", modes["f"])
	}
	j := New()
	for _, n := range []string{"f", "link", "fifo", "dir"} {
		must(j.Remove(d, n))
	}
	j.Cut(t)
	for n, want := range modes {
		var st unix.Stat_t
		if err := unix.Lstat(filepath.Join(p, n), &st); err != nil {
			t.Errorf("%s not taken back: %v", n, err)
			continue
		}
		if got := uint32(st.Mode); got&unix.S_IFMT != want&unix.S_IFMT || want&unix.S_IFMT != unix.S_IFLNK && got != want {
			t.Errorf("%s taken back with mode %o, want %o", n, got, want)
		}
		if !time.Unix(st.Mtim.Unix()).Equal(at) {
			t.Errorf("%s taken back with mtime %v, want %v", n, time.Unix(st.Mtim.Unix()), at)
		}
	}
	if b, err := os.ReadFile(filepath.Join(p, "f")); err != nil || string(b) != "bytes" {
		t.Errorf("f taken back holding %q, %v", b, err)
	}
	if to, err := os.Readlink(filepath.Join(p, "link")); err != nil || to != "elsewhere" {
		t.Errorf("link taken back to %q, %v; want elsewhere", to, err)
	}
}

// What the journal cannot take back it refuses to remove (a socket);
// removing nothing is no error and owes nothing; a Mkdir that found the
// directory there made nothing, and a cut leaves that directory (mutation
// sweep: capture's error and its "nothing there" return dropped or
// inverted, Mkdir's `if made` negated, which journalled the old
// directory as made and a cut removed it).
func TestJournalRefusesWhatItCannotKeepAndOwesNothingForNothing(t *testing.T) {
	p := t.TempDir()
	d, err := fsat.OpenDir(p)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	testfs.Socket(t, filepath.Join(p, "sock"))
	j := New()
	if err := j.Remove(d, "sock"); err == nil || !strings.Contains(err.Error(), "cannot keep a socket") {
		t.Errorf("Remove of a socket = %v; want the journal's refusal", err)
	}
	if err := j.Remove(d, "absent"); err != nil {
		t.Errorf("Remove of nothing = %v", err)
	}
	if err := os.Mkdir(filepath.Join(p, "old"), 0o700); err != nil {
		t.Fatal(err)
	}
	if made, err := j.Mkdir(d, "old", 0o700); made || err != nil {
		t.Fatalf("Mkdir of an existing dir = %v, %v", made, err)
	}
	j.Cut(t)
	if _, err := os.Lstat(filepath.Join(p, "old")); err != nil {
		t.Errorf("a cut took back a directory the journal did not make: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(p, "sock")); err != nil {
		t.Errorf("the socket is gone: %v", err)
	}
}

// The plain cut of a file's life: bytes written after its last fsync are
// lost and the fsynced ones kept, across the rename that put it in place;
// an mtime set and not fsynced goes back; a rename not made durable goes
// back and what it replaced comes back with its own bytes (mutation
// sweep: SetMtime's, SyncFile's and Rename's bookkeeping, trim and the
// data cut of a cut weakened or deleted; the journal's tests had no file
// written past its fsync, no SetMtime and no rename over a file).
func TestCutTakesBackUnsyncedBytesMtimeAndRenames(t *testing.T) {
	p := t.TempDir()
	d, err := fsat.OpenDir(p)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	// "old" is in place and durable before the journal starts.
	must(os.WriteFile(filepath.Join(p, "old"), []byte("old bytes"), 0o600))
	j := New()
	f, err := j.CreateTemp(d, "tmp")
	must(err)
	defer f.Close()
	_, err = f.WriteString("synced")
	must(err)
	must(j.SyncFile(f))
	_, err = f.WriteString(" and not")
	must(err)
	must(j.SyncDir(d)) // the temp's name is durable
	// The temp renamed over "old", not made durable.
	must(j.Rename(d, "tmp", "old"))
	g, err := j.CreateTemp(d, "kept")
	must(err)
	defer g.Close()
	_, err = g.WriteString("kept bytes")
	must(err)
	must(j.SyncFile(g))
	at := time.Date(2022, 3, 4, 5, 6, 7, 8, time.UTC)
	before, err := fsat.Fstat(g)
	must(err)
	must(j.SetMtime(d, "kept", g, at))
	if st, err := fsat.Fstat(g); err != nil || !time.Unix(st.Mtim.Unix()).Equal(at) {
		t.Fatalf("SetMtime left the mtime at %v (%v), want %v", time.Unix(st.Mtim.Unix()), err, at)
	}
	must(j.SyncDir(d)) // "kept" and the rename durable; kept's mtime is not
	_, err = f.WriteString(" more")
	must(err)
	j.Cut(t)
	if b, err := os.ReadFile(filepath.Join(p, "old")); err != nil || string(b) != "synced" {
		t.Errorf("old holds %q, %v; want the temp's fsynced bytes, \"synced\"", b, err)
	}
	if _, err := os.Lstat(filepath.Join(p, "tmp")); err == nil {
		t.Error("the durable rename was taken back")
	}
	var st unix.Stat_t
	must(unix.Lstat(filepath.Join(p, "kept"), &st))
	if st.Mtim != before.Mtim {
		t.Errorf("kept's mtime %v after the cut, want %v (the SetMtime was not fsynced)", time.Unix(st.Mtim.Unix()), time.Unix(before.Mtim.Unix()))
	}

	// A rename over a file, not made durable: undone, the file replaced
	// back with its bytes.
	j = New()
	must(os.WriteFile(filepath.Join(p, "a"), []byte("a's"), 0o600))
	must(os.WriteFile(filepath.Join(p, "b"), []byte("b's"), 0o600))
	must(j.Rename(d, "a", "b"))
	j.Cut(t)
	for n, want := range map[string]string{"a": "a's", "b": "b's"} {
		if b, err := os.ReadFile(filepath.Join(p, n)); err != nil || string(b) != want {
			t.Errorf("after the undone rename %s holds %q, %v; want %q", n, b, err, want)
		}
	}
}

// Images gives one image per distinct outcome, each naming what its cut
// took back, and leaves the tree itself alone: a create and an unlink not
// yet durable make four outcomes (neither lands, the unlink alone, the
// create alone, both), a create alone two (the modes that undo the same
// operations give one image), and data written past its fsync is lost in
// every one. A journal whose Images returned nothing would pass every
// test that loops over them (mutation sweep: the append of an image, of a
// lost entry, the dedupe of equal outcomes, the data's line in Lost
// deleted or negated: the journal's tests looped over Images without
// counting them).
func TestImagesOnePerOutcomeNamingWhatIsLost(t *testing.T) {
	parent := t.TempDir()
	d, err := fsat.OpenDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := os.WriteFile(filepath.Join(parent, "old"), []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	j := New()
	f, err := j.CreateTemp(d, "new")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("unsynced"); err != nil {
		t.Fatal(err)
	}
	if err := j.Remove(d, "old"); err != nil {
		t.Fatal(err)
	}
	ims := j.Images(t, parent)
	var got []string
	for _, im := range ims {
		_, errNew := os.Lstat(filepath.Join(im.Dir, "new"))
		_, errOld := os.Lstat(filepath.Join(im.Dir, "old"))
		got = append(got, fmt.Sprintf("%s: new %v old %v lost %v", im.Mode, errNew == nil, errOld == nil, im.Lost))
	}
	want := []string{
		"nothing-lands: new false old true lost [data of new (0 of 8 bytes kept) create new unlink old]",
		"unlinks-land: new false old false lost [data of new (0 of 8 bytes kept) create new]",
		"names-land: new true old true lost [data of new (0 of 8 bytes kept) unlink old]",
		"all-names-land: new true old false lost [data of new (0 of 8 bytes kept)]",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Images:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if _, err := os.Lstat(filepath.Join(parent, "new")); err != nil {
		t.Errorf("Images changed the tree itself: %v", err)
	}
	j = New()
	g, err := j.CreateTemp(d, "alone")
	if err != nil {
		t.Fatal(err)
	}
	g.Close()
	got = got[:0]
	for _, im := range j.Images(t, parent) {
		got = append(got, im.Mode)
	}
	if strings.Join(got, " ") != "nothing-lands names-land" {
		t.Errorf("Images of a create alone: %v; want nothing-lands names-land", got)
	}
}

// A file made through the journal and then removed, or renamed over, not
// durably comes back as a power cut leaves it: with its fsynced bytes
// only, and the mtime it had before a SetMtime not fsynced (the
// journal's model: the SetMtime goes back) (mutation
// sweep: trim's cut of the kept bytes, its condition, and its mtime step
// deleted or changed; the journal's tests removed only files made
// outside it).
func TestRemovedFileComesBackAsItsLastFsyncLeftIt(t *testing.T) {
	p := t.TempDir()
	d, err := fsat.OpenDir(p)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	j := New()
	f, err := j.CreateTemp(d, "f")
	must(err)
	_, err = f.WriteString("abc")
	must(err)
	must(j.SyncFile(f))
	must(j.SyncDir(d))
	_, err = f.WriteString("def")
	must(err)
	st, err := fsat.Fstat(f) // the mtime the SetMtime replaces
	must(err)
	must(j.SetMtime(d, "f", f, time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)))
	f.Close()
	must(j.Remove(d, "f"))
	j.Cut(t)
	if b, err := os.ReadFile(filepath.Join(p, "f")); err != nil || string(b) != "abc" {
		t.Errorf("f came back holding %q, %v; want its fsynced \"abc\"", b, err)
	}
	var now unix.Stat_t
	must(unix.Lstat(filepath.Join(p, "f"), &now))
	if now.Mtim != st.Mtim {
		t.Errorf("f came back with mtime %v, want %v (the SetMtime was not fsynced)", time.Unix(now.Mtim.Unix()), time.Unix(st.Mtim.Unix()))
	}
}

// A file's fsync state and its pending mtime follow its name and leave
// with it: a SetMtime then fsynced stays; a file renamed or linked to a
// new name has its old name's state there (the bytes since its fsync and
// an mtime not fsynced are lost at the new name); once a name is removed
// or renamed away, or renamed over by a file made outside the journal,
// the journal owes nothing for it, and a file written there later outside
// the journal (taken as it is at the cut, see the package doc) is left
// alone; a file the journal made, renamed over by another and the rename
// not durable, comes back with only its fsynced bytes (mutation sweep:
// the bookkeeping of SyncFile, SetMtime, Link, renamed and removal
// deleted, each left a stale entry or lost one, and no test saw it).
func TestFsyncStateFollowsTheNameAndLeavesWithIt(t *testing.T) {
	p := t.TempDir()
	d, err := fsat.OpenDir(p)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	old := time.Date(2019, 1, 2, 3, 4, 5, 6, time.UTC)
	set := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	outside := time.Date(2018, 5, 6, 7, 8, 9, 10, time.UTC)
	mtime := func(name string) time.Time {
		t.Helper()
		var st unix.Stat_t
		must(unix.Lstat(filepath.Join(p, name), &st))
		return time.Unix(st.Mtim.Unix()).UTC()
	}
	// made makes name through j holding "abc" fsynced and "def" not, its
	// mtime old as of that fsync, then set (not fsynced) if pending.
	made := func(j *Journal, name string, pending bool) {
		t.Helper()
		f, err := j.CreateTemp(d, name)
		must(err)
		defer f.Close()
		_, err = f.WriteString("abc")
		must(err)
		must(os.Chtimes(filepath.Join(p, name), old, old))
		must(j.SyncFile(f))
		_, err = f.WriteString("def")
		must(err)
		must(os.Chtimes(filepath.Join(p, name), old, old))
		if pending {
			must(j.SetMtime(d, name, f, set))
		}
	}
	// writeOutside writes name as a writer outside the journal would.
	writeOutside := func(name string) {
		t.Helper()
		must(os.WriteFile(filepath.Join(p, name), []byte("outside bytes"), 0o600))
		must(os.Chtimes(filepath.Join(p, name), outside, outside))
	}
	check := func(name, bytes string, at time.Time) {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(p, name))
		if err != nil || string(b) != bytes {
			t.Errorf("%s holds %q, %v; want %q", name, b, err, bytes)
			return
		}
		if got := mtime(name); !got.Equal(at) {
			t.Errorf("%s has mtime %v, want %v", name, got, at)
		}
	}

	j := New()
	// kept: a SetMtime then fsynced is durable.
	made(j, "kept", false)
	f, err := os.OpenFile(filepath.Join(p, "kept"), os.O_RDWR, 0)
	must(err)
	must(j.SetMtime(d, "kept", f, set))
	must(j.SyncFile(f))
	f.Close()
	// moved, linked: their names' state is the temp's.
	made(j, "tmp1", true)
	must(j.Rename(d, "tmp1", "moved"))
	made(j, "tmp2", true)
	must(j.Link(d, "tmp2", "linked"))
	must(j.Unlink(d, "tmp2"))
	// over: a file made outside renamed over a journal file; gone: a
	// journal file removed. Each name is then written outside the journal.
	made(j, "over", true)
	writeOutside("o")
	must(j.Rename(d, "o", "over"))
	made(j, "gone", true)
	must(j.Remove(d, "gone"))
	must(j.SyncDir(d))
	for _, n := range []string{"tmp1", "tmp2", "gone"} {
		writeOutside(n)
	}
	for _, im := range j.Images(t, p) {
		want := "[data of linked (3 of 6 bytes kept) data of moved (3 of 6 bytes kept) mtime of linked mtime of moved]"
		if got := fmt.Sprint(im.Lost); got != want {
			t.Errorf("%s: lost %s, want %s", im.Mode, got, want)
		}
	}
	j.Cut(t)
	check("kept", "abcdef", set)
	check("moved", "abc", old)
	check("linked", "abc", old)
	for _, n := range []string{"tmp1", "tmp2", "over", "gone"} {
		check(n, "outside bytes", outside)
	}

	// A journal file, its name durable, renamed over and the rename not
	// durable: it comes back as its last fsync left it.
	j = New()
	made(j, "x", true)
	must(j.SyncDir(d))
	writeOutside("o")
	must(j.Rename(d, "o", "x"))
	j.Cut(t)
	check("x", "abc", old)
	check("o", "outside bytes", outside)
}

// A call that fails journals nothing, and a cut then leaves the tree as
// the failed call left it: a rename of a missing name over a file (undone
// as if it had happened, it moved the file to the missing name), a rename
// over what the journal cannot keep (a socket: renamed over, it could not
// come back), an rmdir of a directory that holds something (journalled,
// its parent's fsync dropped what is still owed inside it), a failed
// fsync of a file (recorded, the file's size then was taken for its
// fsynced bytes) or of a directory (recorded, a cut kept what it did not
// make durable) (mutation sweep: each call's error return dropped).
func TestFailedCallsJournalNothing(t *testing.T) {
	p := t.TempDir()
	d, err := fsat.OpenDir(p)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(p, "file"), []byte("file's"), 0o600))
	must(os.Mkdir(filepath.Join(p, "full"), 0o700))
	testfs.Socket(t, filepath.Join(p, "sock"))
	j := New()
	fd, err := fsat.OpenDirAt(d, "full")
	must(err)
	defer fd.Close()
	f, err := j.CreateTemp(fd, "f")
	must(err)
	defer f.Close()
	_, err = f.WriteString("abc")
	must(err)
	must(j.SyncFile(f))
	must(j.SyncDir(fd))
	_, err = f.WriteString("def")
	must(err)
	g, err := j.CreateTemp(d, "new")
	must(err)
	g.Close()

	if err := j.Rename(d, "missing", "file"); !errors.Is(err, unix.ENOENT) {
		t.Errorf("Rename of a missing name = %v, want ENOENT", err)
	}
	if err := j.Rename(d, "file", "sock"); err == nil || !strings.Contains(err.Error(), "cannot keep a socket") {
		t.Errorf("Rename over a socket = %v; want the journal's refusal", err)
	}
	if _, err := os.Lstat(filepath.Join(p, "sock")); err != nil {
		t.Errorf("the socket is gone: %v", err)
	}
	must(os.Remove(filepath.Join(p, "sock"))) // CopyTree copies no socket
	if err := j.Rmdir(d, "full"); err == nil {
		t.Error("Rmdir of a directory that holds a file succeeded")
	}
	// An fsync that fails: f's name given to a pipe, which cannot be fsynced.
	r, w, err := os.Pipe()
	must(err)
	defer r.Close()
	defer w.Close()
	dup, err := unix.Dup(int(w.Fd()))
	must(err)
	pipe := os.NewFile(uintptr(dup), f.Name())
	defer pipe.Close()
	if (durable.Disk{}).SyncFile(pipe) == nil {
		t.Skip("an fsync of a pipe succeeds here")
	}
	if err := j.SyncFile(pipe); err == nil {
		t.Error("SyncFile of a pipe succeeded")
	}
	closed, err := fsat.OpenDir(p)
	must(err)
	closed.Close()
	if err := j.SyncDir(closed); err == nil {
		t.Error("SyncDir of a closed directory succeeded")
	}
	must(j.SyncDir(d)) // the create of "new" durable; nothing in full
	for _, im := range j.Images(t, p) {
		if got := fmt.Sprint(im.Lost); got != "[data of f (3 of 6 bytes kept)]" {
			t.Errorf("%s: lost %s; want only f's bytes not fsynced", im.Mode, got)
		}
	}
	j.Cut(t)
	for n, want := range map[string]string{"file": "file's", "full/f": "abc", "new": ""} {
		if b, err := os.ReadFile(filepath.Join(p, n)); err != nil || string(b) != want {
			t.Errorf("%s holds %q, %v; want %q", n, b, err, want)
		}
	}
	if _, err := os.Lstat(filepath.Join(p, "missing")); err == nil {
		t.Error("a cut made the missing name of a failed rename")
	}
}

// A cut undoes every operation owed, whatever the kind of the one undone
// before it, and every pending mtime; Lost lists what it takes back in
// one order whatever the journal's maps; a reboot starts the journal
// afresh, so a second cut owes nothing for what the first took back
// (mutation sweep: the undo of a create, a mkdir, a rename over a file
// and of an mtime each made to end the cut once it succeeded, Lost's sort
// and Cut's reset deleted: the journal's tests undid at most one kind of
// operation and cut once).
func TestCutUndoesAllThatIsOwedOnce(t *testing.T) {
	p := t.TempDir()
	d, err := fsat.OpenDir(p)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	old := time.Date(2019, 1, 2, 3, 4, 5, 6, time.UTC)
	for _, n := range []string{"removed", "a", "b", "dated"} {
		must(os.WriteFile(filepath.Join(p, n), []byte(n+"'s"), 0o600))
		must(os.Chtimes(filepath.Join(p, n), old, old))
	}
	j := New()
	// Files with bytes not fsynced, made and named durably: Lost names
	// each, in order.
	for _, n := range []string{"u5", "u3", "u1", "u4", "u2", "u0"} {
		f, err := j.CreateTemp(d, n)
		must(err)
		_, err = f.WriteString(n)
		must(err)
		f.Close()
	}
	must(j.SyncDir(d))
	// Owed, oldest first: a removal, a mkdir, a rename over a file, a
	// create, and an mtime.
	must(j.Remove(d, "removed"))
	made, err := j.Mkdir(d, "dir", 0o700)
	must(err)
	if !made {
		t.Fatal("dir not made")
	}
	must(j.Rename(d, "a", "b"))
	f, err := j.CreateTemp(d, "new")
	must(err)
	f.Close()
	g, err := os.OpenFile(filepath.Join(p, "dated"), os.O_RDWR, 0)
	must(err)
	defer g.Close()
	must(j.SetMtime(d, "dated", g, time.Now()))
	ims := j.Images(t, p)
	if len(ims) == 0 {
		t.Fatal("no image")
	}
	want := "[data of u0 (0 of 2 bytes kept) data of u1 (0 of 2 bytes kept) data of u2 (0 of 2 bytes kept) data of u3 (0 of 2 bytes kept) data of u4 (0 of 2 bytes kept) data of u5 (0 of 2 bytes kept) mtime of dated unlink removed mkdir dir rename b create new]"
	if got := fmt.Sprint(ims[0].Lost); ims[0].Mode != "nothing-lands" || got != want {
		t.Errorf("%s: lost %s\nwant nothing-lands: %s", ims[0].Mode, got, want)
	}
	j.Cut(t)
	check := func(when string) {
		t.Helper()
		for n, want := range map[string]string{"removed": "removed's", "a": "a's", "b": "b's", "dated": "dated's", "u0": ""} {
			if b, err := os.ReadFile(filepath.Join(p, n)); err != nil || string(b) != want {
				t.Errorf("%s: %s holds %q, %v; want %q", when, n, b, err, want)
			}
		}
		for _, n := range []string{"dir", "new"} {
			if _, err := os.Lstat(filepath.Join(p, n)); err == nil {
				t.Errorf("%s: %s is there", when, n)
			}
		}
		var st unix.Stat_t
		must(unix.Lstat(filepath.Join(p, "dated"), &st))
		if at := time.Unix(st.Mtim.Unix()).UTC(); !at.Equal(old) {
			t.Errorf("%s: dated has mtime %v, want %v", when, at, old)
		}
	}
	check("after the cut")
	// After the reboot, a writer outside the journal makes the names
	// again: a second cut owes nothing for them.
	must(os.Mkdir(filepath.Join(p, "dir"), 0o700))
	must(os.WriteFile(filepath.Join(p, "dir", "f"), []byte("f"), 0o600))
	must(os.WriteFile(filepath.Join(p, "u0"), []byte("written again"), 0o600))
	for _, im := range j.Images(t, p) {
		if len(im.Lost) != 0 {
			t.Errorf("%s after a cut: lost %v; want nothing", im.Mode, im.Lost)
		}
	}
	j.Cut(t)
	if b, err := os.ReadFile(filepath.Join(p, "u0")); err != nil || string(b) != "written again" {
		t.Errorf("a second cut left u0 holding %q, %v", b, err)
	}
	if _, err := os.Lstat(filepath.Join(p, "dir", "f")); err != nil {
		t.Errorf("a second cut: %v", err)
	}
}

// fatalTB records a Fatal and stops the function that called it, so that
// a test can see that Images or Cut refused.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Fatal(a ...any) { f.msg = fmt.Sprint(a...); panic(f) }
func (f *fatalTB) Fatalf(format string, a ...any) {
	f.msg = fmt.Sprintf(format, a...)
	panic(f)
}

// fatal runs fn with a fatalTB and returns what it died of ("" if it did
// not).
func fatal(t *testing.T, fn func(testing.TB)) (msg string) {
	tb := &fatalTB{TB: t}
	defer func() {
		if r := recover(); r != nil && r != tb {
			panic(r)
		}
		msg = tb.msg
	}()
	fn(tb)
	return ""
}

// A cut that cannot take back what it owes fails the test rather than
// leave a tree no power cut leaves: Images given a parent that does not
// hold a journalled path (data, an mtime or a directory operation), and
// a cut that finds a renamed name removed behind the journal's back, or
// another name changed there so that its undo fails (mutation sweep: the
// outside check and the failure of Images and Cut deleted or weakened,
// the path errors and the undo errors dropped, removedLater made to say
// yes: each made an image that quietly kept what it owed).
func TestCutThatCannotTakeBackFails(t *testing.T) {
	parent := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, dir := range []string{"in", "out"} {
		must(os.Mkdir(filepath.Join(parent, dir), 0o700))
	}
	d, err := fsat.OpenDir(filepath.Join(parent, "out"))
	must(err)
	defer d.Close()
	in := filepath.Join(parent, "in")
	outside := func(what string, j *Journal) {
		t.Helper()
		if msg := fatal(t, func(tb testing.TB) { j.Images(tb, in) }); !strings.Contains(msg, "is outside") {
			t.Errorf("Images of a parent without the journal's %s: died of %q; want \"… is outside …\"", what, msg)
		}
	}
	// Data only: a file made and named durably, its bytes not fsynced.
	j := New()
	f, err := j.CreateTemp(d, "data")
	must(err)
	_, err = f.WriteString("data")
	must(err)
	f.Close()
	must(j.SyncDir(d))
	outside("data", j)
	// An mtime only.
	j = New()
	g, err := os.OpenFile(filepath.Join(parent, "out", "data"), os.O_RDWR, 0)
	must(err)
	defer g.Close()
	must(j.SetMtime(d, "data", g, time.Now()))
	outside("mtime", j)
	// A mkdir only.
	j = New()
	_, err = j.Mkdir(d, "dir", 0o700)
	must(err)
	outside("mkdir", j)

	// A rename, a removal after it, and the renamed name removed outside
	// the journal: no cut can put the name back.
	j = New()
	must(os.WriteFile(filepath.Join(parent, "out", "other"), nil, 0o600))
	must(j.Rename(d, "data", "renamed"))
	must(j.Remove(d, "other"))
	must(os.Remove(filepath.Join(parent, "out", "renamed")))
	if msg := fatal(t, func(tb testing.TB) { j.Cut(tb) }); !strings.Contains(msg, "renamed") {
		t.Errorf("a cut that cannot undo a rename: died of %q; want the rename's error", msg)
	}

	// Names changed behind the journal's back so that an undo fails: a
	// removal whose directory is gone, a create whose name is now a
	// directory that holds something, a pending mtime whose directory is
	// now a file.
	for _, c := range []struct {
		what string
		do   func(j *Journal, sub *os.File, subPath string)
		want string
	}{
		{"a removal whose directory is gone", func(j *Journal, sub *os.File, subPath string) {
			must(os.WriteFile(filepath.Join(subPath, "x"), nil, 0o600))
			must(j.Remove(sub, "x"))
			must(os.RemoveAll(subPath))
		}, "x"},
		{"a create whose name holds a directory", func(j *Journal, sub *os.File, subPath string) {
			f, err := j.CreateTemp(sub, "x")
			must(err)
			f.Close()
			must(os.Remove(filepath.Join(subPath, "x")))
			must(os.MkdirAll(filepath.Join(subPath, "x", "y"), 0o700))
		}, "x"},
		{"an mtime whose directory is a file", func(j *Journal, sub *os.File, subPath string) {
			must(os.WriteFile(filepath.Join(subPath, "x"), nil, 0o600))
			f, err := os.OpenFile(filepath.Join(subPath, "x"), os.O_RDWR, 0)
			must(err)
			defer f.Close()
			must(j.SetMtime(sub, "x", f, time.Now()))
			must(os.RemoveAll(subPath))
			must(os.WriteFile(subPath, nil, 0o600))
		}, "not a directory"},
	} {
		subPath := filepath.Join(parent, "out", "sub")
		os.RemoveAll(subPath)
		must(os.Mkdir(subPath, 0o700))
		sub, err := fsat.OpenDir(subPath)
		must(err)
		j := New()
		c.do(j, sub, subPath)
		sub.Close()
		if msg := fatal(t, func(tb testing.TB) { j.Images(tb, parent) }); !strings.Contains(msg, c.want) {
			t.Errorf("Images after %s: died of %q; want its error", c.what, msg)
		}
		if msg := fatal(t, func(tb testing.TB) { j.Cut(tb) }); !strings.Contains(msg, c.want) {
			t.Errorf("a cut after %s: died of %q; want its error", c.what, msg)
		}
	}
}

// A file renamed aside and removed there, neither durable, as a reap of a
// file does: a cut that lands nothing brings it back at its old name; one
// that lands the removal leaves neither name (the rename reached the disk
// with the removal of its new name); one that lands the names only leaves
// it at the new name (mutation sweep: removedLater's test of the removal
// negated or made to match another path survived, the journal's one such
// test removing a file inside the renamed directory first).
func TestFileRenamedAsideAndRemoved(t *testing.T) {
	p := t.TempDir()
	d, err := fsat.OpenDir(p)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := os.WriteFile(filepath.Join(p, "f"), []byte("f's"), 0o600); err != nil {
		t.Fatal(err)
	}
	j := New()
	if err := j.RenameNoReplace(d, "f", "aside"); err != nil {
		t.Fatal(err)
	}
	if err := j.Unlink(d, "aside"); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"nothing-lands":  "f",
		"unlinks-land":   "",
		"names-land":     "aside",
		"all-names-land": "",
	}
	ims := j.Images(t, p)
	if len(ims) != len(want) {
		t.Errorf("%d images, want %d", len(ims), len(want))
	}
	for _, im := range ims {
		var got []string
		for _, n := range []string{"f", "aside"} {
			if b, err := os.ReadFile(filepath.Join(im.Dir, n)); err == nil && string(b) == "f's" {
				got = append(got, n)
			}
		}
		if strings.Join(got, " ") != want[im.Mode] {
			t.Errorf("%s: f's bytes at %q, want %q (lost: %v)", im.Mode, got, want[im.Mode], im.Lost)
		}
	}
}

// CopyTree copies each kind it knows with its mtime, so that an image
// starts as the tree was, and fails on a tree it cannot walk (mutation
// sweep: the copy of a file's, a link's or a FIFO's mtime skipped, and
// its t.Fatal deleted, survived; no test compared them).
func TestCopyTreeKeepsKindsBytesAndMtimes(t *testing.T) {
	from, to := t.TempDir(), t.TempDir()
	at := unix.NsecToTimespec(time.Date(2017, 8, 9, 10, 11, 12, 13, time.UTC).UnixNano())
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Mkdir(filepath.Join(from, "dir"), 0o700))
	must(os.WriteFile(filepath.Join(from, "dir", "f"), []byte("f's"), 0o600))
	must(os.Symlink("nowhere", filepath.Join(from, "link")))
	must(unix.Mkfifo(filepath.Join(from, "fifo"), 0o600))
	// dir dated last, after f was made in it; "." too.
	names := []string{"dir/f", "link", "fifo", "dir", "."}
	for _, n := range names {
		must(unix.UtimesNanoAt(unix.AT_FDCWD, filepath.Join(from, n), []unix.Timespec{at, at}, unix.AT_SYMLINK_NOFOLLOW))
	}
	CopyTree(t, from, to)
	for _, n := range names {
		var a, b unix.Stat_t
		must(unix.Lstat(filepath.Join(from, n), &a))
		if err := unix.Lstat(filepath.Join(to, n), &b); err != nil {
			t.Errorf("%s not copied: %v", n, err)
			continue
		}
		if a.Mode&unix.S_IFMT != b.Mode&unix.S_IFMT || b.Mtim != at {
			t.Errorf("%s copied as mode %o mtime %v; want %o, %v", n, b.Mode, b.Mtim, a.Mode, at)
		}
	}
	if b, err := os.ReadFile(filepath.Join(to, "dir", "f")); err != nil || string(b) != "f's" {
		t.Errorf("dir/f copied holding %q, %v", b, err)
	}
	if l, err := os.Readlink(filepath.Join(to, "link")); err != nil || l != "nowhere" {
		t.Errorf("link copied to %q, %v", l, err)
	}
	// A tree it cannot walk fails the test rather than give an empty image.
	if msg := fatal(t, func(tb testing.TB) { CopyTree(tb, filepath.Join(from, "absent"), to) }); msg == "" {
		t.Error("CopyTree of a missing tree did not fail")
	}
}

// A file's fsync state is its own, not its name's: an fsync, a write or
// a SetMtime through a descriptor opened before a rename or a link is
// the file's at every name it has (the descriptor's own name, os.File's
// Name, is where it was opened). Each case writes "abc", fsyncs, gives
// the file another name ("final"), then, through the descriptor, writes
// "def" and fsyncs, or sets its mtime, or fsyncs a SetMtime made before
// the new name: a cut must keep what was fsynced at every name and take
// back what was not; a file written outside the journal at the old name
// is left as written.
func TestFsyncStateIsTheFilesNotItsName(t *testing.T) {
	old := time.Date(2019, 1, 2, 3, 4, 5, 6, time.UTC)
	set := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	outside := time.Date(2018, 5, 6, 7, 8, 9, 10, time.UTC)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	const (
		asOld  = "old"  // the mtime at the first fsync
		asSet  = "set"  // the SetMtime's
		asLeft = "left" // as the step through the descriptor left it (fsynced)
	)
	for _, c := range []struct {
		name    string
		pending bool // a SetMtime, not fsynced, before the new name
		// move gives tmp its new name "final" (and may take "tmp" away).
		move func(j *Journal, d *os.File)
		// after is done through f once the file is at "final".
		after func(j *Journal, d *os.File, f *os.File)
		// final's bytes and mtime after a cut; tmp's bytes ("": the
		// name is gone, and a file outside the journal is written there).
		bytes, mtime, tmp string
	}{
		{"rename, then a write and an fsync", false, func(j *Journal, d *os.File) { must(j.Rename(d, "tmp", "final")) },
			func(j *Journal, d *os.File, f *os.File) { write(t, f, "def"); must(j.SyncFile(f)) }, "abcdef", asLeft, ""},
		{"link and unlink, then a write and an fsync", false, func(j *Journal, d *os.File) { must(j.Link(d, "tmp", "final")); must(j.Unlink(d, "tmp")) },
			func(j *Journal, d *os.File, f *os.File) { write(t, f, "def"); must(j.SyncFile(f)) }, "abcdef", asLeft, ""},
		{"link, then a write and an fsync: both names", false, func(j *Journal, d *os.File) { must(j.Link(d, "tmp", "final")) },
			func(j *Journal, d *os.File, f *os.File) { write(t, f, "def"); must(j.SyncFile(f)) }, "abcdef", asLeft, "abcdef"},
		{"rename, then a SetMtime not fsynced", false, func(j *Journal, d *os.File) { must(j.Rename(d, "tmp", "final")) },
			func(j *Journal, d *os.File, f *os.File) { must(j.SetMtime(d, "final", f, set)) }, "abc", asOld, ""},
		{"a SetMtime, rename, then an fsync", true, func(j *Journal, d *os.File) { must(j.Rename(d, "tmp", "final")) },
			func(j *Journal, d *os.File, f *os.File) { must(j.SyncFile(f)) }, "abc", asSet, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := t.TempDir()
			d, err := fsat.OpenDir(p)
			must(err)
			defer d.Close()
			j := New()
			f, err := j.CreateTemp(d, "tmp")
			must(err)
			defer f.Close()
			write(t, f, "abc")
			must(os.Chtimes(filepath.Join(p, "tmp"), old, old))
			must(j.SyncFile(f))
			if c.pending {
				must(j.SetMtime(d, "tmp", f, set))
			}
			must(j.SyncDir(d))
			c.move(j, d)
			must(j.SyncDir(d))
			c.after(j, d, f)
			left, err := fsat.Fstat(f)
			must(err)
			if c.tmp == "" {
				must(os.WriteFile(filepath.Join(p, "tmp"), []byte("outside"), 0o600))
				must(os.Chtimes(filepath.Join(p, "tmp"), outside, outside))
			}
			j.Cut(t)
			want := map[string]unix.Timespec{asOld: unix.NsecToTimespec(old.UnixNano()), asSet: unix.NsecToTimespec(set.UnixNano()), asLeft: left.Mtim}[c.mtime]
			b, err := os.ReadFile(filepath.Join(p, "final"))
			var st unix.Stat_t
			if err == nil {
				err = unix.Lstat(filepath.Join(p, "final"), &st)
			}
			if err != nil || string(b) != c.bytes || st.Mtim != want {
				t.Errorf("final holds %q (%v), mtime %v; want %q, mtime %v (%s)", b, err, time.Unix(st.Mtim.Unix()).UTC(), c.bytes, time.Unix(want.Unix()).UTC(), c.mtime)
			}
			wantTmp := c.tmp
			if wantTmp == "" {
				wantTmp = "outside"
			}
			if b, err := os.ReadFile(filepath.Join(p, "tmp")); err != nil || string(b) != wantTmp {
				t.Errorf("tmp holds %q, %v; want %q", b, err, wantTmp)
			}
			if c.tmp == "" {
				if err := unix.Lstat(filepath.Join(p, "tmp"), &st); err != nil || !time.Unix(st.Mtim.Unix()).Equal(outside) {
					t.Errorf("the file outside the journal at tmp has mtime %v (%v); want %v, as written", time.Unix(st.Mtim.Unix()).UTC(), err, outside)
				}
			}
		})
	}
}

// A truncate after an fsync is not durable until the next fsync: a cut
// gives the file back the bytes it had at its last fsync, whether it was
// cut short since, or cut short and written again to as long or longer;
// an fsync after the truncate makes it durable.
func TestATruncateAfterAnFsyncIsTakenBack(t *testing.T) {
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	const back = "[data of f (its 6 fsynced bytes back in place of %d cut short or rewritten)]"
	for _, c := range []struct {
		name   string
		after  func(f *os.File)
		synced bool // fsynced after
		want   string
		lost   string // Lost of every image
	}{
		{"cut short", func(f *os.File) { must(f.Truncate(2)) }, false, "abcdef", fmt.Sprintf(back, 2)},
		{"emptied and written again shorter", func(f *os.File) { must(f.Truncate(0)); writeAt(t, f, "xy", 0) }, false, "abcdef", fmt.Sprintf(back, 2)},
		{"emptied and written again longer", func(f *os.File) { must(f.Truncate(0)); writeAt(t, f, "uvwxyz12", 0) }, false, "abcdef", fmt.Sprintf(back, 8)},
		{"cut short, then fsynced", func(f *os.File) { must(f.Truncate(2)) }, true, "ab", "[data of f (2 of 4 bytes kept)]"},
		{"emptied, written again and fsynced, then written", func(f *os.File) { must(f.Truncate(0)); writeAt(t, f, "xy", 0) }, true, "xy", "[data of f (2 of 4 bytes kept)]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := t.TempDir()
			d, err := fsat.OpenDir(p)
			must(err)
			defer d.Close()
			j := New()
			f, err := j.CreateTemp(d, "f")
			must(err)
			defer f.Close()
			write(t, f, "abcdef")
			must(j.SyncFile(f))
			must(j.SyncDir(d))
			c.after(f)
			if c.synced {
				must(j.SyncFile(f))
				writeAt(t, f, "zz", 2) // past the fsync: taken back
			}
			ims := j.Images(t, p)
			j.Cut(t)
			if b, err := os.ReadFile(filepath.Join(p, "f")); err != nil || string(b) != c.want {
				t.Errorf("f holds %q, %v after the cut; want %q", b, err, c.want)
			}
			for _, im := range ims {
				if b, err := os.ReadFile(filepath.Join(im.Dir, "f")); err != nil || string(b) != c.want || fmt.Sprint(im.Lost) != c.lost {
					t.Errorf("%s: f holds %q, %v; want %q (lost %v, want %s)", im.Mode, b, err, c.want, im.Lost, c.lost)
				}
			}
		})
	}
}

func write(t *testing.T, f *os.File, s string) {
	t.Helper()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

func writeAt(t *testing.T, f *os.File, s string, at int64) {
	t.Helper()
	if _, err := f.WriteAt([]byte(s), at); err != nil {
		t.Fatal(err)
	}
}

// What the journal knows of a file it loses when the file is gone from
// every name it knows, so that another file given its inode next (ext4
// hands a freed inode to the next create) is judged as a file of its
// own: its bytes are not the journal's to take back, and its mtime goes
// back to its own. The journal's file goes by a removal or a rename over
// it (mutation sweep: the bookkeeping of the names and of forget
// deleted, each left the old file's state on the new one).
func TestAFileGoneFromItsNamesLeavesNothingToItsInode(t *testing.T) {
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	old := time.Date(2019, 1, 2, 3, 4, 5, 6, time.UTC)
	mine := time.Date(2018, 5, 6, 7, 8, 9, 10, time.UTC)
	for _, how := range []string{"removed", "renamed over"} {
		t.Run(how, func(t *testing.T) {
			p := t.TempDir()
			d, err := fsat.OpenDir(p)
			must(err)
			defer d.Close()
			must(os.WriteFile(filepath.Join(p, "other"), []byte("other's"), 0o600))
			j := New()
			f, err := j.CreateTemp(d, "f")
			must(err)
			write(t, f, "abc")
			must(j.SyncFile(f))
			write(t, f, "def")
			must(j.SetMtime(d, "f", f, old))
			st, err := fsat.Fstat(f)
			must(err)
			f.Close()
			if how == "removed" {
				must(j.Unlink(d, "f"))
			} else {
				must(j.Rename(d, "other", "f"))
			}
			must(j.SyncDir(d))
			// Files made outside the journal until one has f's inode.
			var reused string
			for i := range 64 {
				n := fmt.Sprintf("new%d", i)
				must(os.WriteFile(filepath.Join(p, n), []byte("its own bytes"), 0o600))
				var nst unix.Stat_t
				must(unix.Lstat(filepath.Join(p, n), &nst))
				if nst.Ino == st.Ino && nst.Dev == st.Dev {
					reused = n
					break
				}
			}
			if reused == "" {
				t.Skip("no inode freed here is handed to the next file")
			}
			must(os.Chtimes(filepath.Join(p, reused), mine, mine))
			g, err := os.OpenFile(filepath.Join(p, reused), os.O_RDWR, 0)
			must(err)
			defer g.Close()
			must(j.SetMtime(d, reused, g, time.Now()))
			j.Cut(t)
			var nst unix.Stat_t
			must(unix.Lstat(filepath.Join(p, reused), &nst))
			if b, err := os.ReadFile(filepath.Join(p, reused)); err != nil || string(b) != "its own bytes" || !time.Unix(nst.Mtim.Unix()).Equal(mine) {
				t.Errorf("%s, on f's inode, holds %q (%v), mtime %v; want its own bytes, mtime %v", reused, b, err, time.Unix(nst.Mtim.Unix()).UTC(), mine)
			}
		})
	}
}

// Two SetMtimes not fsynced go back to the mtime before the first
// (mutation sweep: the second's earlier mtime taken, which the journal's
// tests never did twice).
func TestTwoSetMtimesGoBackToTheFirst(t *testing.T) {
	p := t.TempDir()
	d, err := fsat.OpenDir(p)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	old := time.Date(2019, 1, 2, 3, 4, 5, 6, time.UTC)
	if err := os.WriteFile(filepath.Join(p, "f"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(filepath.Join(p, "f"), old, old); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(p, "f"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	j := New()
	for _, at := range []time.Time{old.Add(time.Hour), old.Add(2 * time.Hour)} {
		if err := j.SetMtime(d, "f", f, at); err != nil {
			t.Fatal(err)
		}
	}
	j.Cut(t)
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join(p, "f"), &st); err != nil || !time.Unix(st.Mtim.Unix()).Equal(old) {
		t.Errorf("f's mtime %v (%v) after the cut; want %v, the one before both", time.Unix(st.Mtim.Unix()).UTC(), err, old)
	}
}

// The journal reads a file's fsynced bytes at a name it knows that still
// holds the file, whichever of its names that is; one it knows no name of
// (renamed outside the journal) fails the fsync rather than image it
// wrong (mutation sweep: the read's identity check, its going on past a
// name that holds another file, and SyncFile's error, each deleted).
func TestAnFsyncReadsTheFileAtANameThatHoldsIt(t *testing.T) {
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	p := t.TempDir()
	d, err := fsat.OpenDir(p)
	must(err)
	defer d.Close()
	j := New()
	f, err := j.CreateTemp(d, "a")
	must(err)
	defer f.Close()
	write(t, f, "abc")
	must(j.Link(d, "a", "z"))
	must(j.SyncDir(d))
	// "a", first in order, now holds another file, put there outside the
	// journal; "z" still holds f.
	must(os.WriteFile(filepath.Join(p, "other"), []byte("outside"), 0o600))
	must(os.Rename(filepath.Join(p, "other"), filepath.Join(p, "a")))
	write(t, f, "def")
	must(j.SyncFile(f))
	write(t, f, "ghi")
	ims := j.Images(t, p)
	for _, im := range ims {
		if b, err := os.ReadFile(filepath.Join(im.Dir, "z")); err != nil || string(b) != "abcdef" {
			t.Errorf("%s: z holds %q, %v; want its fsynced \"abcdef\" (lost %v)", im.Mode, b, err, im.Lost)
		}
		if b, err := os.ReadFile(filepath.Join(im.Dir, "a")); err != nil || string(b) != "outside" {
			t.Errorf("%s: a holds %q, %v; want the file outside the journal, as written", im.Mode, b, err)
		}
	}
	// Renamed outside the journal: no name it knows holds f.
	must(os.Rename(filepath.Join(p, "z"), filepath.Join(p, "elsewhere")))
	if err := j.SyncFile(f); err == nil || !strings.Contains(err.Error(), "no name the power-cut journal knows holds this file") {
		t.Errorf("SyncFile of a file renamed outside the journal = %v; want the journal's refusal", err)
	}
}

// A name the journal links is known by the file it holds, whatever name
// it was linked from: a file the journal made, linked by the journal
// from a name made outside it, has at the new name only its fsynced bytes
// after a cut (mutation sweep: the new name's file taken from the source
// name's entry survived, every other test linking from a name the
// journal made). The name made outside the journal it does not follow
// (RELIABILITY §9).
func TestALinkFromANameMadeOutsideIsKnownByItsFile(t *testing.T) {
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	p := t.TempDir()
	d, err := fsat.OpenDir(p)
	must(err)
	defer d.Close()
	j := New()
	f, err := j.CreateTemp(d, "a")
	must(err)
	defer f.Close()
	write(t, f, "abc")
	must(j.SyncFile(f))
	must(os.Link(filepath.Join(p, "a"), filepath.Join(p, "b")))
	must(j.Link(d, "b", "c"))
	must(j.SyncDir(d))
	write(t, f, "def")
	// An image, not a cut in place: there the three names share the file,
	// and a cut at one of them cuts them all.
	for _, im := range j.Images(t, p) {
		if b, err := os.ReadFile(filepath.Join(im.Dir, "c")); err != nil || string(b) != "abc" {
			t.Errorf("%s: c holds %q, %v; want its fsynced \"abc\" (lost %v)", im.Mode, b, err, im.Lost)
		}
	}
}

// A temp the journal creates is a new file, whatever the journal knew of
// its inode: a file removed outside the journal (bbolt's, a test's own
// os.Remove) leaves what the journal owed it, and ext4 hands the freed
// inode to the next create. The temp's bytes are then the journal's to take
// back from nothing, as any temp's; taken for the old file (an outside
// file's mtime owed, so not made through the journal), a missing fsync of
// the temp would be imaged as durable. Mutation sweep (rev10b): CreateTemp
// keeping the inode's old entry survived every other test.
func TestATempOnAnInodeTheJournalKnewIsANewFile(t *testing.T) {
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	p := t.TempDir()
	d, err := fsat.OpenDir(p)
	must(err)
	defer d.Close()
	j := New()
	// A file made outside the journal, whose mtime the journal set: the
	// journal owes it its old mtime, and knows it by its name.
	outside := filepath.Join(p, "outside")
	must(os.WriteFile(outside, []byte("outside"), 0o600))
	g, err := os.OpenFile(outside, os.O_RDWR, 0)
	must(err)
	must(j.SetMtime(d, "outside", g, time.Now()))
	st, err := fsat.Fstat(g)
	must(err)
	g.Close()
	must(os.Remove(outside)) // not through the journal
	// Temps through the journal until one has the freed inode.
	var reused string
	for i := range 64 {
		n := fmt.Sprintf("t%d", i)
		f, err := j.CreateTemp(d, n)
		must(err)
		nst, err := fsat.Fstat(f)
		must(err)
		if nst.Ino == st.Ino && nst.Dev == st.Dev {
			reused = n
			write(t, f, "never fsynced")
		}
		f.Close()
		if reused != "" {
			break
		}
	}
	if reused == "" {
		t.Skip("no inode freed here is handed to the next file")
	}
	must(j.SyncDir(d)) // the temp's name is durable, its bytes are not
	j.Cut(t)
	if b, err := os.ReadFile(filepath.Join(p, reused)); err != nil || len(b) != 0 {
		t.Fatalf("%s after the cut holds %q, %v; want it empty, as a temp never fsynced", reused, b, err)
	}
}

// A directory's mtime is the store's clock for an empty key dir (reap
// removes one left unchanged for the TTL): a cut that undoes every
// operation still owed in a directory leaves it dated as it was before
// the first of them, not as the image was made; in a cut that lands one
// of them it keeps its newest mtime. Operations made durable by an fsync
// before are not undone, so they are not undated either.
func TestACutDatesADirectoryAsItsOperationsLeftIt(t *testing.T) {
	p := t.TempDir()
	dp := filepath.Join(p, "d")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Mkdir(dp, 0o700))
	for _, n := range []string{"synced", "gone"} {
		must(os.WriteFile(filepath.Join(dp, n), nil, 0o600))
	}
	d, err := fsat.OpenDir(dp)
	must(err)
	defer d.Close()
	j := New()
	must(j.Remove(d, "synced"))
	must(j.SyncDir(d))
	// Dated by hand once the fsynced removal is durable: the first
	// operation still owed comes after this.
	at := unix.NsecToTimespec(time.Date(2019, 3, 4, 5, 6, 7, 8, time.UTC).UnixNano())
	must(unix.UtimesNanoAt(unix.AT_FDCWD, dp, []unix.Timespec{at, at}, 0))
	f, err := j.CreateTemp(d, "new")
	must(err)
	f.Close()
	must(j.Remove(d, "gone"))
	var now unix.Stat_t
	must(unix.Lstat(dp, &now))
	if now.Mtim == at {
		t.Fatal("the create and the removal left d's mtime as it was")
	}
	modes := map[string]bool{}
	for _, img := range j.Images(t, p) {
		modes[img.Mode] = true
		var st unix.Stat_t
		must(unix.Lstat(filepath.Join(img.Dir, "d"), &st))
		want := now.Mtim // some operation landed
		if img.Mode == "nothing-lands" {
			want = at
		}
		if st.Mtim != want {
			t.Errorf("%s: d dated %v, want %v (before the create %v, now %v)", img.Mode, time.Unix(st.Mtim.Unix()), time.Unix(want.Unix()), time.Unix(at.Unix()), time.Unix(now.Mtim.Unix()))
		}
	}
	if !modes["nothing-lands"] || !modes["unlinks-land"] {
		t.Fatalf("images in %v", modes)
	}
	j.Cut(t)
	var st unix.Stat_t
	must(unix.Lstat(dp, &st))
	if st.Mtim != at {
		t.Errorf("cut in place: d dated %v, want %v", time.Unix(st.Mtim.Unix()), time.Unix(at.Unix()))
	}
}

// The journal books what is done in a directory by the directory's path.
// Through a descriptor of a directory moved behind its back (a key dir
// check --quarantine moved aside while a writer waited for its lock),
// booked at the old name, a removal landed in every cut however long its
// fsync was owed, a create or a rename was booked to whatever is at the
// old name now, and an fsync landed what the directory now at the name
// owes. Each is booked where the directory is now (its descriptor's name),
// and an fsync of it lands its own operations only; in a directory that
// has no name left (removed) each is refused, and changes nothing.
func TestWhatIsDoneInADirectoryMovedIsBookedWhereItIs(t *testing.T) {
	p := t.TempDir()
	k, aside := filepath.Join(p, "k"), filepath.Join(p, "aside")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	has := func(dir, name string) bool {
		_, err := os.Lstat(filepath.Join(dir, name))
		return err == nil
	}
	must(os.Mkdir(k, 0o700))
	must(os.WriteFile(filepath.Join(k, "f"), []byte("f's"), 0o600))
	kd, err := fsat.OpenDir(k)
	must(err)
	defer kd.Close()
	must(os.Rename(k, aside))
	must(os.Mkdir(k, 0o700)) // another directory at the old name
	nd, err := fsat.OpenDir(k)
	must(err)
	defer nd.Close()
	j := New()
	must(j.Remove(kd, "f"))
	tf, err := j.CreateTemp(kd, "t")
	must(err)
	tf.Close()
	nf, err := j.CreateTemp(nd, "t") // the other directory's, owed to its own fsync
	must(err)
	nf.Close()
	for _, im := range j.Images(t, p) {
		// Nothing fsynced: only a mode that lands a removal lands aside/f's,
		// and only one that lands new names lands the temps.
		unlinks, names := im.Mode == Modes[1].Name || im.Mode == Modes[3].Name, im.Mode == Modes[2].Name || im.Mode == Modes[3].Name
		if has(im.Dir, "aside/f") == unlinks || has(im.Dir, "aside/t") != names || has(im.Dir, "k/t") != names || has(im.Dir, "k/f") || has(im.Dir, "aside/k") {
			t.Errorf("before any fsync, %s: aside/f %v, aside/t %v, k/t %v, k/f %v (lost %v)", im.Mode, has(im.Dir, "aside/f"), has(im.Dir, "aside/t"), has(im.Dir, "k/t"), has(im.Dir, "k/f"), im.Lost)
		}
	}
	must(j.SyncDir(kd))
	for _, im := range j.Images(t, p) {
		names := im.Mode == Modes[2].Name || im.Mode == Modes[3].Name
		if has(im.Dir, "aside/f") || !has(im.Dir, "aside/t") || has(im.Dir, "k/t") != names {
			t.Errorf("the moved dir fsynced, %s: aside/f %v, aside/t %v, k/t %v (lost %v)", im.Mode, has(im.Dir, "aside/f"), has(im.Dir, "aside/t"), has(im.Dir, "k/t"), im.Lost)
		}
	}

	// A directory removed has no name to book anything at.
	gone := filepath.Join(p, "gone")
	must(os.Mkdir(gone, 0o700))
	gd, err := fsat.OpenDir(gone)
	must(err)
	defer gd.Close()
	must(os.Remove(gone))
	calls := map[string]func() error{
		"remove": func() error { return j.Remove(gd, "f") },
		"rename": func() error { return j.Rename(gd, "f", "g") },
		"link":   func() error { return j.Link(gd, "f", "g") },
		"create": func() error {
			f, err := j.CreateTemp(gd, "t")
			if f != nil {
				f.Close()
			}
			return err
		},
		"mkdir": func() error { _, err := j.Mkdir(gd, "d", 0o700); return err },
		"fsync": func() error { return j.SyncDir(gd) },
	}
	for name, call := range calls {
		if err := call(); err == nil || !strings.Contains(err.Error(), "no longer at that name") {
			t.Errorf("%s in a directory removed behind the journal: %v, want it refused", name, err)
		}
	}
	j.Cut(t)
	if has(k, "t") || !has(aside, "t") || has(aside, "f") {
		t.Errorf("cut in place: k/t %v, aside/t %v, aside/f %v; want only aside/t", has(k, "t"), has(aside, "t"), has(aside, "f"))
	}
}
