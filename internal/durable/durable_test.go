package durable

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/internal/fsat"
)

// Disk makes each call it names, and reports its failure: the protocols'
// tests run on powercut's journal, which models the calls and never sees
// whether Disk makes them, so a Disk that skipped an fsync or a rename,
// or a create that opened a name already there, would pass every one of
// them (mutation sweep: CreateTemp's O_EXCL dropped, SyncFile, SetMtime,
// Rename and SyncDir made nil: ./internal/durable/powercut held none).
func TestDiskMakesEachCall(t *testing.T) {
	p := t.TempDir()
	dir, err := fsat.OpenDir(p)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	var fs FS = Disk{}
	// A name already there, a hard link to a file the caller must never
	// write through, is no temp: the create fails.
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("victim"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(victim, filepath.Join(p, "tmp")); err != nil {
		t.Fatal(err)
	}
	if f, err := fs.CreateTemp(dir, "tmp"); !errors.Is(err, unix.EEXIST) {
		if f != nil {
			f.Close()
		}
		t.Errorf("CreateTemp over an existing name = %v; want EEXIST", err)
	}
	f, err := fs.CreateTemp(dir, "new")
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2020, 1, 2, 3, 4, 5, 6, time.UTC)
	if err := fs.SetMtime(dir, "new", f, at); err != nil {
		t.Fatal(err)
	}
	if st, err := fsat.Fstat(f); err != nil || !time.Unix(st.Mtim.Unix()).Equal(at) {
		t.Errorf("SetMtime: mtime %v (%v), want %v", time.Unix(st.Mtim.Unix()), err, at)
	}
	if err := fs.SyncFile(f); err != nil {
		t.Fatal(err)
	}
	if err := fs.Rename(dir, "new", "renamed"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(p, "renamed")); err != nil {
		t.Errorf("Rename left no renamed: %v", err)
	}
	if err := fs.SyncDir(dir); err != nil {
		t.Fatal(err)
	}
	// A failing fsync (here: of a closed descriptor) is reported.
	f.Close()
	if err := fs.SyncFile(f); err == nil {
		t.Error("SyncFile of a closed file = nil; want its error")
	}
	closed, err := fsat.OpenDir(p)
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	if err := fs.SyncDir(closed); err == nil {
		t.Error("SyncDir of a closed dir = nil; want its error")
	}
}
