package fleet

import (
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"sessdb/fleet/internal/sharedfs"
	"sessdb/internal/durable"
	"sessdb/internal/etcdtest"
	"sessdb/internal/fsat"
	"sessdb/store"
)

// A reap lists the transcripts dir once: the mark's temps a crash left
// are taken from the listing that finds the orphans, not from a second
// one (on NFS with many files, a second full listing per reap). Dry and
// real, each lists it once, and sweeps what it did: the key's orphan and
// the old mark temp. Before, each reap listed the dir twice (ListOrphans,
// then markTemps).
func TestReapListsTheTranscriptsDirOnce(t *testing.T) {
	f := newFixture(t, etcdtest.Start1(t))
	key := store.Key("github", "reap-lists", "once")
	f.runExpired(key, "old") // promoted 30 days ago: its old files are past the grace period
	orphan := f.oldOrphan(key)
	temp := f.oldMarkTemp()
	lists := f.countListings()
	want := []string{key + "/" + filepath.Base(orphan), temp}
	for _, dry := range []bool{true, false} {
		lists.n.Store(0)
		res, err := f.b.Reap(t.Context(), ReapOptions{DryRun: dry})
		if err != nil || !slices.Equal(res.Swept, want) || len(res.Skipped) != 0 {
			t.Fatalf("reap (dry run %v) = %+v, %v; want %v swept", dry, res, err, want)
		}
		if n := lists.n.Load(); n != 1 {
			t.Errorf("reap (dry run %v) listed the transcripts dir %d times; want 1", dry, n)
		}
	}
	for _, p := range []string{orphan, filepath.Join(f.dir, temp)} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s after reap: %v; want it removed", p, err)
		}
	}
}

// listCounter is the disk, counting the listings of one directory (by
// its device and inode).
type listCounter struct {
	durable.Disk
	dev, ino uint64
	n        atomic.Int32
}

func (l *listCounter) ReadDirNames(d *os.File) ([]string, error) {
	if st, err := fsat.Fstat(d); err == nil && uint64(st.Dev) == l.dev && uint64(st.Ino) == l.ino {
		l.n.Add(1)
	}
	return fsat.ReadDirNames(d)
}

// countListings has sharedfs count the listings of f's transcripts dir
// until the test ends.
func (f *fixture) countListings() *listCounter {
	f.t.Helper()
	var dir unix.Stat_t
	if err := unix.Stat(f.dir, &dir); err != nil {
		f.t.Fatal(err)
	}
	l := &listCounter{dev: uint64(dir.Dev), ino: uint64(dir.Ino)}
	f.t.Cleanup(sharedfs.Use(l))
	return l
}
