package shared

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sessdb/fleet/internal/sharedfs"
	"sessdb/internal/fsat"
)

// The transcripts dir going away after a key's directory was listed,
// before its files' lstat (each then fails: ESTALE over NFS), stops the
// listing with the dir named, as at the key dir's open and listing: its
// files are not taken for gone one by one. Before: each was left out as
// removed since the listing, and ListOrphans returned no orphans and no
// error, a reap then exiting 0 having judged nothing.
func TestListOrphansStopsWhenTheDirGoesAfterAKeysListing(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-48 * time.Hour)
	p := filepath.Join(dir, key, "0000000000000001-0123456789abcdef.jsonl")
	os.Mkdir(filepath.Dir(p), 0o700)
	os.WriteFile(p, []byte("{}\n"), 0o600)
	os.Chtimes(p, old, old)
	away, held := dir+".away", filepath.Join(t.TempDir(), "held")
	restore := sharedfs.Use(listing{list: func(d *os.File) ([]string, error) {
		names, err := fsat.ReadDirNames(d)
		if filepath.Base(d.Name()) != key {
			return names, err // the transcripts dir's own listing
		}
		// The stand-in for a stale export: the file out of reach of the
		// key dir's descriptor, the dir itself gone from its path.
		if err := os.Rename(p, held); err != nil {
			t.Error(err)
		}
		if err := os.Rename(dir, away); err != nil {
			t.Error(err)
		}
		return names, err
	}})
	defer restore()
	got, _, unreadable, err := listOrphans(context.Background(), dir, func(string, string, time.Time) bool { return false }, time.Now())
	restore()
	os.Rename(away, dir)
	os.Rename(held, p)
	if !errors.Is(err, ErrDirUnavailable) || !strings.Contains(err.Error(), dir) || got != nil || unreadable != nil {
		t.Fatalf("ListOrphans = %v, unreadable %v, %v; want the dir named", got, unreadable, err)
	}
}
