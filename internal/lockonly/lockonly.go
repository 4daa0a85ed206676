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
// one.
type Before struct {
	found bool
	st    unix.Stat_t
}

// Look looks at kd's meta.db before such an open.
func Look(kd *os.File) Before {
	st, err := fsat.LstatAt(kd, db.FileName)
	return Before{found: err == nil, st: st}
}

// MadeByOpen reports whether d, opened in kd with sidecars sc after b was
// looked at, is a meta.db that open made for its lock: none was found, or
// the one found is gone (a rival's lock file, removed while the open
// waited) and the open made another; and it holds no record, no stamp and
// no history, which a rival's commit between the open's create and its
// lock could have put there. A history that cannot be read counts as one.
func (b Before) MadeByOpen(kd *os.File, d *db.DB, sc db.Sidecars) bool {
	if sc != (db.Sidecars{}) || b.found && b.same(kd) {
		return false
	}
	var h []db.HistoryEntry
	err := d.View(func(tx *db.Tx) (err error) { h, err = tx.History(1); return err })
	return err == nil && len(h) == 0
}

// same reports whether kd's meta.db is still the file b found. The inode
// number alone cannot say it (ext4 gives a freed number to the next file
// created), so the change time is compared too.
func (b Before) same(kd *os.File) bool {
	now, err := fsat.LstatAt(kd, db.FileName)
	return err == nil && now.Dev == b.st.Dev && now.Ino == b.st.Ino && now.Ctim == b.st.Ctim
}
