package shared

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"sessdb/fleet/internal/sharedfs"
	"sessdb/internal/durable"
)

// A WriteMark whose temp's fsync fails (EIO: NFS reports a write the
// server refused at the fsync) is that error, never a bad mark, and leaves
// nothing: no mark, no temp. One whose fsync of the dir fails after the
// rename is that error too, and leaves the mark in place (another writer
// may have read it already: it is never taken back), no temp; the next
// WriteMark returns it, found, and fsyncs the dir.
func TestAMarkWriteThatFailsLeavesNoTemp(t *testing.T) {
	m := Mark{ID: "0123456789abcdef0123456789abcdef", Prefix: "/sessdb"}
	for _, c := range []struct {
		name   string
		disk   durable.FS
		marked bool
	}{
		{"the temp's fsync", failingSyncFile{}, false},
		{"the dir's fsync", failingSyncDir{fail: func(*os.File) bool { return true }}, true},
	} {
		dir := t.TempDir()
		restore := sharedfs.Use(c.disk)
		got, err := WriteMark(dir, m)
		restore()
		if !errors.Is(err, unix.EIO) || errors.Is(err, ErrBadMark) || got != (Mark{}) {
			t.Errorf("%s fails: WriteMark = %+v, %v; want the EIO, no mark returned", c.name, got, err)
		}
		names, _ := filepath.Glob(filepath.Join(dir, "*"))
		temps, _ := filepath.Glob(filepath.Join(dir, markTempPrefix+"*"))
		_, found, rerr := ReadMark(dir)
		if len(temps) != 0 || found != c.marked || rerr != nil || len(names) != len(temps)+map[bool]int{true: 1}[c.marked] {
			t.Errorf("%s fails: the dir holds %v (the mark found %v, %v); want no temp, the mark %v", c.name, names, found, rerr, c.marked)
		}
		if got, err := WriteMark(dir, m); err != nil || got != m {
			t.Errorf("%s fails, then WriteMark again: %+v, %v; want the mark", c.name, got, err)
		}
	}
}
