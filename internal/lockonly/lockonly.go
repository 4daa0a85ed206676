// Package lockonly tells a meta.db that an open made for its lock alone,
// and that holds nothing, from one that holds a key's data: a migration
// that finds, once it has the lock, that its key dir was moved aside (a
// quarantine, a reap) takes away what its own open made there, and
// nothing else.
package lockonly

import (
	"os"

	"golang.org/x/sys/unix"

	"sessdb/db"
	"sessdb/internal/fsat"
)

// Before is a key dir's meta.db as it was before an open that may create
// one: its lstat, and the file itself held open. Held, its inode cannot be
// freed, so no file made since gets its number (ext4 gives a freed number
// to the next file created): the number alone tells the two apart. The
// change time tells nothing: an older file's schema migration (at the
// open for schema 0, at the first write for schema 1) writes it, as does
// a roll forward's commit or a chmod.
type Before struct {
	found bool
	st    unix.Stat_t
	held  *os.File // nil: absent, or not a regular file (an open fails on it)
}

// Look looks at kd's meta.db before such an open, and holds it; Close lets
// go of it.
func Look(kd *os.File) Before {
	if f, st, err := fsat.OpenRegularAt(kd, db.FileName); err == nil {
		return Before{found: true, st: st, held: f}
	}
	st, err := fsat.LstatAt(kd, db.FileName)
	return Before{found: err == nil, st: st}
}

// Close lets go of the file b holds.
func (b Before) Close() {
	if b.held != nil {
		b.held.Close()
	}
}

// Is reports whether kd's meta.db, which d holds opened after b was
// looked at, is still the file b found, or the copy d's open gave that
// file when it had more than one name (db.DB.CopiedFrom: the same bytes
// under another inode, no file an open made). One that was not held is
// compared by its change time too, as the best left.
func (b Before) Is(kd *os.File, d *db.DB) bool {
	if !b.found {
		return false
	}
	if dev, ino, ok := d.CopiedFrom(); ok && b.held != nil {
		return dev == uint64(b.st.Dev) && ino == uint64(b.st.Ino)
	}
	now, err := fsat.LstatAt(kd, db.FileName)
	return err == nil && now.Dev == b.st.Dev && now.Ino == b.st.Ino && (b.held != nil || now.Ctim == b.st.Ctim)
}

// MadeByOpen reports whether d, opened in kd with sidecars sc after b was
// looked at, is a meta.db that open made for its lock: none was found, or
// the one found is gone (a rival's lock file, removed while the open
// waited) and the open made another; and it holds no record, no stamp and
// no history, which a rival's commit between the open's create and its
// lock could have put there. A history that cannot be read counts as one.
func (b Before) MadeByOpen(kd *os.File, d *db.DB, sc db.Sidecars) bool {
	if sc != (db.Sidecars{}) || b.Is(kd, d) {
		return false
	}
	var h []db.HistoryEntry
	err := d.View(func(tx *db.Tx) (err error) { h, err = tx.History(1); return err })
	return err == nil && len(h) == 0
}
