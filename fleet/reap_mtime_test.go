package fleet

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// A key whose record's date is ahead (a promoter's clock a year on) is
// aged by its file's mtime only where that file is a regular file (a
// resolve judges no other by its mtime: expired's doc). An old directory
// at the record's file name, which any hand or hostile job can make,
// does not age the key into a removal. Before (mutant p20 of the fleet
// sweep's list, as `ok && (true || fsat.IsRegular(&st))`: the plain drop
// did not build), no test put anything but a regular file there: the
// mutant aged the key by the directory's mtime and removed it.
func TestReapAgesAKeyByARegularFilesMtimeOnly(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	key := store.Key("github", "reap-mtime", "dir")
	f.now = time.Now().Add(365 * 24 * time.Hour)
	f.run(key, "one")
	f.now = time.Time{}
	p := filepath.Join(f.dir, f.recordFile(key))
	old := time.Now().Add(-30 * 24 * time.Hour)
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(p, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
	res, err := f.b.Reap(t.Context(), ReapOptions{TTL: 14 * 24 * time.Hour})
	if err != nil || slices.Contains(res.Removed, key) || res.Kept != 1 {
		t.Fatalf("reap of a key dated a year ahead, a 30-day-old directory at its file's name = %+v, %v; want it kept", res, err)
	}
}
