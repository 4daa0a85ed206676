package store

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"sessdb/db"
	"sessdb/gates"
)

// eioAt is a file's bytes whose ReadAt of n bytes at off fails with EIO.
type eioAt struct {
	b   []byte
	off int64
	n   int
}

func (f eioAt) ReadAt(p []byte, off int64) (int, error) {
	if off == f.off && len(p) == f.n {
		return 0, syscall.EIO
	}
	return bytes.NewReader(f.b).ReadAt(p, off)
}

// A meta page whose read failed (an I/O error) says nothing of either
// page: the report (dump's meta_pages, of a meta.db that did not open)
// has the error and no pages. It showed the pages as InspectMeta left
// them: page 0's read failing, page 1, never read, as valid with txid 0,
// and either failing, fallback true ("bbolt has one commit left").
func TestMetaPagesReportOfAPageNotReadHasNoPages(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "one")
	b, err := os.ReadFile(filepath.Join(root, testKey, db.FileName))
	if err != nil {
		t.Fatal(err)
	}
	good, err := db.InspectMeta(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	const metaRead = 80 // a page header and bbolt's meta
	for page := range good.Pages {
		r := metaPagesReport(db.InspectMeta(eioAt{b, int64(page * good.PageSize), metaRead}, int64(len(b))))
		if r.Error == "" || r.Fallback || len(r.Pages) != 0 || r.Active != -1 {
			t.Errorf("meta page %d not read: report error %q, fallback %v, active %d, pages %+v; want the read's error, no fallback, no pages", page, r.Error, r.Fallback, r.Active, r.Pages)
		}
	}
}
