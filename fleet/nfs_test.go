package fleet

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// An NFS client's silly rename (.nfsXXXX: a file removed while that
// client still had it open, a generation reaped under a slow resolve on
// the same host) is reported by check as what it is, a notice, and stays
// reported while it stays; neither check --repair nor reap ever removes
// it (its client does, at the last close), nor the key dir that holds
// only it. Before: "a file the fleet does not write", which says nothing
// of where it comes from or that it goes by itself.
func TestCheckNamesAnNFSSillyRenameAndNothingRemovesIt(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	key := store.Key("github", "nfs-silly", "x")
	f.run(key, "one")
	lone := "0123456789abcdef0123456789abcdef" // a key dir with no record, holding only one
	os.Mkdir(filepath.Join(f.dir, lone), 0o700)
	silly := []string{key + "/.nfs000000000012345600000001", lone + "/.nfs0000000000abcdef00000002"}
	old := time.Now().Add(-48 * time.Hour)
	for _, p := range silly {
		os.WriteFile(filepath.Join(f.dir, p), []byte(testHeader), 0o600)
		os.Chtimes(filepath.Join(f.dir, p), old, old)
		os.Chtimes(filepath.Dir(filepath.Join(f.dir, p)), old, old)
	}
	later := func() time.Time { return time.Now().Add(24 * time.Hour) }
	for _, repair := range []bool{false, true} {
		var finds []store.Finding
		if _, err := f.b.Check(context.Background(), CheckOptions{Repair: repair, Now: later}, func(x store.Finding) error { finds = append(finds, x); return nil }); err != nil {
			t.Fatal(err)
		}
		if len(finds) != 2 {
			t.Fatalf("repair %v: %+v; want the two silly renames", repair, finds)
		}
		for _, x := range finds {
			if !slices.Contains(silly, x.Path) || x.Kind != store.KindUnknownEntry || x.Severity != store.SeverityNotice || x.Repaired ||
				!strings.Contains(x.Detail, "NFS") || !strings.Contains(x.Detail, "closes") {
				t.Errorf("repair %v: %+v; want a notice saying what it is", repair, x)
			}
		}
	}
	res, err := f.b.Reap(context.Background(), ReapOptions{Now: later})
	if err != nil || len(res.Swept) != 0 {
		t.Fatalf("reap = %+v, %v; want nothing swept", res, err)
	}
	for _, p := range silly {
		if _, err := os.Stat(filepath.Join(f.dir, p)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	f.holds(key, "one", 1)
}

// In a key's directory, an entry at a name the fleet never gives is named
// as what it is: a symbolic link is a link, a problem, as one at a
// generation's name or in the transcripts dir itself is (docs: check
// reports links), and a directory or a FIFO is not called a file.
// Before, each was "a file the fleet does not write", a notice, the link
// among them.
func TestCheckNamesAnOddEntryOfAKeyDirAsWhatItIs(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	key := store.Key("github", "odd-entries", "x")
	f.run(key, "one")
	kd := filepath.Join(f.dir, key)
	if err := os.Symlink("/etc/passwd", filepath.Join(kd, "notes")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(kd, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(kd, "notes.txt"), []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	found, sum := checkFindings(t, f.b, CheckOptions{})
	want := map[string]struct {
		kind store.Kind
		says string
	}{
		key + "/notes":     {store.KindLink, `a symbolic link to "/etc/passwd"; sessdb never follows it`},
		key + "/sub":       {store.KindUnknownEntry, "a directory the fleet does not write"},
		key + "/notes.txt": {store.KindUnknownEntry, "a file the fleet does not write"},
	}
	for path, w := range want {
		fd, ok := found[path]
		if !ok || fd.Kind != w.kind || fd.Severity != w.kind.Severity() || !strings.Contains(fd.Detail, w.says) {
			t.Errorf("check of %s: %+v (found %v); want %s saying %q", path, fd, ok, w.kind, w.says)
		}
	}
	if len(found) != len(want) || sum.Problems != 1 {
		t.Errorf("check found %+v, %+v; want the three entries, one problem (the link)", found, sum)
	}
}

// Such an entry removed between the listing of its key's directory and
// its look (its owner tidying up) is nothing to report, as every other
// name gone since the listing is.
func TestCheckSaysNothingOfAnOddEntryGoneSinceTheListing(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	key := store.Key("github", "odd-entries", "gone")
	f.run(key, "one")
	notes := filepath.Join(f.dir, key, "notes.txt")
	if err := os.WriteFile(notes, []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	f.b.hook = func(p, k string) error {
		if p == hookCheckDirListed && k == key {
			os.Remove(notes)
		}
		return nil
	}
	found, _ := checkFindings(t, f.b, CheckOptions{})
	if len(found) != 0 {
		t.Errorf("check found %+v; want nothing (notes.txt gone since the listing)", found)
	}
}
