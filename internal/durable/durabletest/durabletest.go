// Package durabletest holds durable.FS wrappers for sessdb's tests: each
// makes the writes durable.Disk makes, and looks at one of them from the
// side of another process.
package durabletest

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"

	"sessdb/internal/durable"
	"sessdb/internal/fsat"
)

// FlockAtRemoval removes as durable.Disk does, and at the removal of Name,
// first asks, through an open of its own (relative to dir, following no
// link), whether Name's flock could be had: what a creator stalled
// between its temp's create and its flock (db.TakeTemp) would find at the
// instant before the name goes.
type FlockAtRemoval struct {
	durable.Disk
	Name string
	Seen *FlockSeen
}

// FlockSeen is what FlockAtRemoval found: whether the removal of its name
// passed through it, and whether the flock was free then.
type FlockSeen struct{ Asked, Free bool }

// Remove is durable.Disk's, after the look at the flock.
func (d FlockAtRemoval) Remove(dir *os.File, name string) error {
	if name == d.Name {
		f, err := fsat.OpenAt(dir, name, unix.O_RDONLY, 0)
		if err != nil {
			return err
		}
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		f.Close()
		d.Seen.Asked, d.Seen.Free = true, !errors.Is(err, unix.EWOULDBLOCK)
	}
	return d.Disk.Remove(dir, name)
}
