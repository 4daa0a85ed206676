package store

import (
	"errors"
	"fmt"

	"sessdb/db"
	"sessdb/internal/faults"
	"sessdb/internal/fsat"
)

// maxDeepProblems caps what DeepCheckDB reports of one file: a damaged
// file can yield an error per page, and the first few say what happened.
const maxDeepProblems = 20

// DeepCheckDB runs bbolt's full consistency check (Tx.Check: no page both
// free and in use, none unreachable, every branch and leaf well formed and
// in order) on key's meta.db and returns what it found. Problems are
// proof of damage: what the check found, or damage that kept it from
// running (the pre-check refusing the file, bbolt refusing it or panicking
// on it). Anything else that keeps it from running (the lock not had in
// time, an I/O error) proves nothing and is returned as Incomplete. Both
// empty means the file is consistent.
//
// The file is opened as OpenReader opens it, pre-check and shared lock
// included, and that lock is held through the check, so no writer changes
// the file meanwhile and bbolt maps only a file the pre-check passed. It
// changes nothing.
//
// Caveat: see db.DB.Check: damage the pre-check does not catch can kill
// the process. Call it only in a process whose death the caller survives;
// sessdb check runs it in a child process.
func (s *Store) DeepCheckDB(key string) DeepResult {
	if !ValidKey(key) {
		return DeepResult{Incomplete: fmt.Sprintf("check %q: %v", key, ErrInvalidKey)}
	}
	failed := func(err error) DeepResult {
		if errors.Is(err, db.ErrDamaged) {
			return DeepResult{Problems: []string{err.Error()}}
		}
		return DeepResult{Incomplete: err.Error()}
	}
	root, err := s.openRoot()
	if err != nil {
		return failed(err)
	}
	defer root.Close()
	kd, err := fsat.OpenDirAt(root, key)
	if err != nil {
		return failed(err)
	}
	defer kd.Close()
	// Which dir the key's name led to: the caller holds the one it opened
	// first, and judges only that one by this result.
	st, err := fsat.Fstat(kd)
	if err != nil {
		return failed(err)
	}
	name := fsat.Join(kd, db.FileName)
	// And which file meta.db's name led to: the same file, unchanged in
	// its change time, before the open and after the check. A file
	// renamed over meta.db while this ran and renamed away again (the
	// A,B,A swap one level down) changes the change time of the file
	// that was moved away and back, as a rename or a link does.
	was, ferr := fsat.LstatAt(kd, db.FileName)
	at := func(r DeepResult) DeepResult {
		r.DirDev, r.DirIno = uint64(st.Dev), uint64(st.Ino)
		if err := s.fault(faults.DeepCheckAfterCheck); err != nil {
			return DeepResult{Incomplete: fmt.Sprintf("%s: %v", name, err), DirDev: r.DirDev, DirIno: r.DirIno}
		}
		now, err := fsat.LstatAt(kd, db.FileName)
		switch {
		case ferr != nil && err != nil && len(r.Problems) == 0:
			// No file at the name, before and after, and the open
			// said so. Problems would be of a file that was there
			// only meanwhile, not the one the caller holds.
			return r
		case ferr != nil || err != nil || now.Dev != was.Dev || now.Ino != was.Ino || now.Ctim != was.Ctim:
			return DeepResult{Incomplete: fmt.Sprintf("%s was replaced while it was checked", name), DirDev: r.DirDev, DirIno: r.DirIno}
		}
		r.FileDev, r.FileIno = uint64(was.Dev), uint64(was.Ino)
		return r
	}
	// Its caller (sessdb check) holds the key's shared lock throughout,
	// in the process that started this one: a writer waiting for that
	// lock must not hold this reader back.
	d, err := db.OpenReader(kd, name, db.Options{LockTimeout: s.opts.LockTimeout, NoTurnstile: true})
	if err != nil {
		return at(failed(err))
	}
	defer d.Close()
	found, err := d.Check(maxDeepProblems)
	if err != nil {
		if r := failed(err); r.Incomplete != "" && len(found) == 0 {
			return at(r)
		}
		found = append(found, err.Error())
	}
	return at(DeepResult{Problems: found})
}
