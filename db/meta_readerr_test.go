package db

import (
	"bytes"
	"errors"
	"os"
	"syscall"
	"testing"
)

// failingAt is a file's bytes whose ReadAt of n bytes at off fails with
// EIO: a transient I/O error on one read.
type failingAt struct {
	b   []byte
	off int64
	n   int
}

func (f failingAt) ReadAt(p []byte, off int64) (int, error) {
	if off == f.off && len(p) == f.n {
		return 0, syscall.EIO
	}
	return bytes.NewReader(f.b).ReadAt(p, off)
}

// A meta page whose read fails (an I/O error) says nothing of the page:
// InspectMeta returns the read's error, not damage and not a fallback.
// The page was taken for an invalid one, and the file judged by the other
// page, its older commit: a resolve of a key whose newest page's read
// failed once cold-started it as transcript-replaced (the older record
// does not describe the transcript in place; reproduced with strace
// failing that pread64 with EIO), and check reported meta-page-invalid,
// which check --repair acts on by moving meta.db aside.
func TestMetaPageNotReadIsTheReadsError(t *testing.T) {
	kd := makeDB(t, 4)
	b, err := os.ReadFile(kd.db)
	if err != nil {
		t.Fatal(err)
	}
	good, err := InspectMeta(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	for page := range good.Pages {
		m, err := InspectMeta(failingAt{b, int64(page * good.PageSize), pageHeaderSize + metaSize}, int64(len(b)))
		if !errors.Is(err, syscall.EIO) || errors.Is(err, ErrDamaged) {
			t.Fatalf("InspectMeta with meta page %d's read failing = active %d, %v; want EIO, not damage (active %d when read)", page, m.Active, err, good.Active)
		}
	}
	// The first read of all, bbolt's page-size probe at offset 0, too.
	if _, err := InspectMeta(failingAt{b, 0, firstMetaRead}, int64(len(b))); !errors.Is(err, syscall.EIO) || errors.Is(err, ErrDamaged) {
		t.Fatalf("InspectMeta with the first read failing: %v; want EIO, not damage", err)
	}
}
