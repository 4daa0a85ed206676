package shared

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"sessdb/fleet/internal/sharedfs"
	"sessdb/internal/durable"
)

// Write's errors read through the durability seam (sharedfs) are the
// system's, as they were when shared made the calls itself: a name taken
// by another's file between the temp and its rename is ErrExists on the
// *os.LinkError of the call that found it (renameat2's, or link's where
// the filesystem refuses the flag), no EEXIST left to read as success,
// the other's file untouched and the temp gone; a link that is the temp's
// own (an NFS LINK retransmitted) is success; a create in a key dir gone
// stale is made again, once. These run Write end to end on the real
// calls, where the other tests stand noReplace or beforeCreate in.
func TestWriteReadsTheSystemsErrorsThroughTheSeam(t *testing.T) {
	for _, tc := range []struct {
		name string
		fs   func(dir string) durable.FS
		op   string // the LinkError's Op; "": Write succeeds
	}{
		{"renameat2 onto another's name", func(dir string) durable.FS { return &seamDisk{plant: true} }, "rename"},
		{"link onto another's name", func(dir string) durable.FS { return &seamDisk{plant: true, refuse: unix.EINVAL} }, "link"},
		{"link answered EEXIST for its own link", func(dir string) durable.FS { return &seamDisk{refuse: unix.EINVAL, retransmit: true} }, ""},
		{"create in a key dir gone stale", func(dir string) durable.FS { return &seamDisk{stale: filepath.Join(dir, key)} }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			disk := tc.fs(dir)
			defer sharedfs.Use(disk)()
			name, size, _, err := Write(context.Background(), dir, key, 1, strings.NewReader("mine\n"))
			if tc.op == "" {
				if err != nil || size != 5 {
					t.Fatalf("Write = %q, %d, %v; want it written", name, size, err)
				}
				if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(b) != "mine\n" {
					t.Fatalf("read back %q: %q, %v", name, b, err)
				}
			} else {
				var le *os.LinkError
				if !errors.Is(err, ErrExists) || errors.Is(err, unix.EEXIST) || !errors.As(err, &le) || le.Op != tc.op ||
					le.New != filepath.Join(dir, key, disk.(*seamDisk).planted) {
					t.Fatalf("Write = %q, %v (%#v); want ErrExists on the %s's LinkError naming %s", name, err, le, tc.op, disk.(*seamDisk).planted)
				}
				if b, err := os.ReadFile(filepath.Join(dir, key, disk.(*seamDisk).planted)); err != nil || string(b) != "other\n" {
					t.Fatalf("the other's file: %q, %v", b, err)
				}
			}
			if ents := entries(t, filepath.Join(dir, key)); len(ents) != 1 {
				t.Fatalf("the key dir holds %v; want one file, no temp", ents)
			}
		})
	}
}

// seamDisk is durable.Disk with the answers the test needs: plant puts
// another's file at the final name just before the call that takes it;
// refuse is the atomic rename's errno (a filesystem without it);
// retransmit makes the link twice, as an NFS client whose first reply was
// lost; stale removes the key dir before the first create and answers
// ESTALE, as an NFS server that no longer knows it.
type seamDisk struct {
	durable.Disk
	plant, retransmit bool
	refuse            unix.Errno
	stale             string
	planted           string
}

func (d *seamDisk) plantAt(dir *os.File, to string) {
	if d.plant {
		d.planted = to
		os.WriteFile(filepath.Join(dir.Name(), to), []byte("other\n"), 0o600)
	}
}

func (d *seamDisk) RenameNoReplaceAtomic(dir *os.File, from, to string) error {
	if d.refuse != 0 {
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: d.refuse}
	}
	d.plantAt(dir, to)
	return d.Disk.RenameNoReplaceAtomic(dir, from, to)
}

func (d *seamDisk) Link(dir *os.File, from, to string) error {
	d.plantAt(dir, to)
	if d.retransmit {
		if err := d.Disk.Link(dir, from, to); err != nil {
			return err
		}
	}
	return d.Disk.Link(dir, from, to)
}

func (d *seamDisk) CreateTemp(dir *os.File, name string) (*os.File, error) {
	if d.stale != "" {
		os.Remove(d.stale)
		d.stale = ""
		return nil, &os.PathError{Op: "open", Path: filepath.Join(dir.Name(), name), Err: unix.ESTALE}
	}
	return d.Disk.CreateTemp(dir, name)
}
