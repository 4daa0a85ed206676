package sharedfs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sessdb/internal/durable"
	"sessdb/internal/faults"
)

// While a test runs beside others (faults.Beside), setting the seam
// panics and leaves it as it was: every test's writes go through it.
// Once none does, Use sets it until restore.
func TestUsePanicsWhileATestRunsBeside(t *testing.T) {
	other := otherFS{durable.Disk{}}
	done := faults.Beside()
	msg := func() (msg string) {
		defer func() {
			if r := recover(); r != nil {
				msg, _ = r.(string)
			}
		}()
		Use(other)
		return ""
	}()
	done()
	if !strings.Contains(msg, "beside") {
		t.Errorf("Use with a test beside = panic %q; want it to panic, naming why", msg)
	}
	if _, ok := FS().(durable.Disk); !ok {
		t.Fatalf("FS() after the refused Use = %T; want durable.Disk", FS())
	}
	restore := Use(other)
	if _, ok := FS().(otherFS); !ok {
		t.Errorf("FS() after Use = %T; want the FS given", FS())
	}
	restore()
	if _, ok := FS().(durable.Disk); !ok {
		t.Errorf("FS() after restore = %T; want durable.Disk", FS())
	}
}

// otherFS is an FS told apart from durable.Disk by its type.
type otherFS struct{ durable.Disk }

// ReadDirNames lists as fsat.ReadDirNames does, and through the FS set
// where that is a Lister: the listings of the transcripts dir a test
// counts or fails are all there are.
func TestReadDirNamesGoesThroughALister(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if names, err := ReadDirNames(d); err != nil || len(names) != 1 || names[0] != "a" {
		t.Fatalf("ReadDirNames = %q, %v; want [a]", names, err)
	}
	l := &lister{}
	restore := Use(l)
	names, err := ReadDirNames(d)
	restore()
	if err != nil || len(names) != 1 || names[0] != "listed" || l.n != 1 {
		t.Errorf("ReadDirNames with a Lister set = %q, %v (%d listings); want the Lister's answer, once", names, err, l.n)
	}
}

// lister is the disk, answering every listing itself.
type lister struct {
	durable.Disk
	n int
}

func (l *lister) ReadDirNames(*os.File) ([]string, error) {
	l.n++
	return []string{"listed"}, nil
}
