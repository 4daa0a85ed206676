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
