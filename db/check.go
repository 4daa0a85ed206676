package db

import (
	"fmt"
	"os"

	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"
)

// Check runs bbolt's full consistency check (no page both free and in use,
// none unreachable, every branch and leaf well formed and in order) in a
// read transaction and returns what it reports, at most max problems and
// a count of the rest; nil means the file is consistent. An error means
// the check could not run.
//
// Caveat: bbolt walks the file in a goroutine of its own, beyond the guard
// that turns damage into ErrDamaged elsewhere in this package, so damage
// the pre-check does not catch can kill the process. Call it only in a
// process whose death the caller survives (sessdb check runs it in a
// child process).
func (d *DB) Check(max int) (problems []string, err error) {
	d.mu.Lock() // a reader's bbolt handle is made here, once
	if d.bdb == nil && !d.closed {
		err = d.openBoltReader()
	}
	d.mu.Unlock()
	if err != nil {
		return nil, pathErr("check", d.name, err)
	}
	err = d.run(false, func(tx *Tx) error {
		n := 0
		for err := range tx.tx.Check() {
			if n++; n <= max {
				problems = append(problems, err.Error())
			}
		}
		if n > max {
			problems = append(problems, fmt.Sprintf("and %d more", n-max))
		}
		return nil
	})
	return problems, err
}

// openBoltReader gives a snapshot reader the bbolt handle that Check needs,
// over a duplicate of its locked descriptor: flock belongs to the open file
// description the two share, so bbolt's shared flock succeeds at once, and
// a read-only bbolt never unlocks it at Close. Transactions then go through
// bbolt, which reads the same file the snapshot was taken of.
func (d *DB) openBoltReader() error {
	dup, err := unix.FcntlInt(d.file.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return err
	}
	bopts := &bolt.Options{
		ReadOnly:     true,
		NoStatistics: true,
		OpenFile: func(string, int, os.FileMode) (*os.File, error) {
			return os.NewFile(uintptr(dup), d.name), nil
		},
	}
	var bdb *bolt.DB
	err = d.call(func() (err error) { bdb, err = bolt.Open(d.name, 0o400, bopts); return err })
	if err != nil {
		return damagedBy("bbolt", err)
	}
	d.bdb, d.snap = bdb, nil
	return nil
}
