package migrate

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/db"
	"sessdb/internal/faults"
	"sessdb/internal/fsat"
	"sessdb/internal/lockonly"
	"sessdb/store"
	"sessdb/store/legacy"
)

// planLegacy decides what ToLegacy does to the key dir kd: write the
// legacy files that say what meta.db holds and then remove meta.db
// (Migrated), remove only an empty meta.db (Migrated, no Values), or
// nothing. With write, the plan is read under meta.db's exclusive lock
// with any promotion in flight rolled forward first (lockSettled); without
// it (a dry run), under a shared lock, reading a promotion in flight as
// landed. The lock, when taken, is held in the plan even on error.
func (m *migrator) planLegacy(kd *os.File, key string, write bool) (*plan, error) {
	p := &plan{}
	k, err := scanKey(kd, m.now())
	switch {
	case err != nil:
		return p, err
	case !k.meta:
		p.Action = Already
		return p, nil
	case k.freshLock():
		p.legacyLocked(k)
		return p, nil
	}
	var sc db.Sidecars
	if write {
		sc, err = m.lockSettled(kd, key, k.storeTemps, p)
	} else {
		sc, err = m.lockShared(kd, p)
	}
	if err != nil || p.lock == nil || p.made {
		return p, err
	}
	// Listed again under the lock: a legacy worker may have come back
	// while this call waited.
	if k, err = scanKey(kd, m.now()); err != nil {
		return p, err
	}
	if k.freshLock() {
		p.legacyLocked(k)
		return p, nil
	}

	if sc == (db.Sidecars{}) {
		// The forward rule read backwards: a meta.db with no record at all
		// is a migration or promotion that never committed; whatever
		// legacy files are beside it are the values.
		p.Action, p.Removed = Migrated, append(p.Removed, db.FileName)
		p.Oddities = append(p.Oddities, Oddity{db.FileName, "empty (no record at all)", "an interrupted migration or promotion: only meta.db is removed; legacy files beside it hold the values"})
		return p, nil
	}
	if k.movedAside {
		// The record outranks the moved-aside file only in meta.db: a
		// legacy key dir beside one is meta-moved-aside, cold, and the
		// rollback would turn a key that resumes into one that does not.
		// Only the operator can say the moved-aside file may go.
		return p, fmt.Errorf("%s: a meta.db check --repair moved aside is beside the key's meta.db, which has a record again: the legacy layout would read the key as meta-moved-aside and cold-start it; inspect the file, move it out of the key dir, and run again", fsat.Join(kd, k.aside))
	}
	v := valuesOf(sc)
	rec := sc.Transcript
	pend := recordedPending(p.lock)
	// Read no further than a file that could match: the record, or the
	// generation before a promotion whose temp was lost. A larger file
	// is a mismatch by its size alone, whatever it holds.
	sumUpTo := int64(-1)
	if rec != nil {
		sumUpTo = rec.Size
	}
	if pend != nil && pend.Prev != nil {
		sumUpTo = max(sumUpTo, pend.Prev.Size)
	}
	t, _, err := transcriptID(m.ctx, kd, sumUpTo)
	if err != nil {
		return p, err
	}
	// A promotion in flight (only a dry run sees one) will land the
	// transcript its record names, and an empty transcript is absent to
	// the ladder before any record is compared: neither is a mismatch.
	mismatch := false
	if t != nil && t.Size > 0 && sc.Pending == nil &&
		(rec == nil || rec.Size != t.Size || rec.CRC32C != uint64(t.CRC32C)) {
		if lost := lostPrev(pend, t); lost != nil {
			// A committed promotion's temp was lost before its rename:
			// the store serves the generation before it, in place.
			p.Oddities = append(p.Oddities, Oddity{legacy.TranscriptName, fmt.Sprintf("gen %d, the generation before a committed promotion (gen %d) whose temp was lost", lost.Prev.Gen, lost.Gen), "kept as the transcript, as the store serves it"})
		} else {
			// meta.db cold-starts this transcript (transcript-replaced); the
			// legacy layout has no record to compare, so the venue says it.
			pending := legacy.PendingVenue
			v.Venue = &pending
			mismatch = true
			p.Oddities = append(p.Oddities, Oddity{legacy.TranscriptName, "does not match its record in meta.db", `venue stamped "(pending)" so the key stays cold, as it was`})
		}
	}
	files, odd, err := legacyFiles(kd, v)
	if err != nil {
		return p, err
	}
	if err := fullInTheWay(kd, k, files); err != nil {
		return p, err
	}
	stamp := rec != nil && t != nil && !mismatch // below
	if stamp {
		if err := mayStamp(kd); err != nil {
			return p, err
		}
	}
	p.Action, p.Values, p.files = Migrated, &v, files
	p.Oddities = append(p.Oddities, odd...)
	for _, f := range files {
		if f.content != nil {
			p.Written = append(p.Written, f.name)
		} else if k.present(f.name) {
			p.Removed = append(p.Removed, f.name)
		}
	}
	p.Removed = append(p.Removed, db.FileName)
	// The legacy clock for expired is the transcript's mtime; with no
	// transcript there is nothing to carry it. A transcript that is not
	// the record's keeps its own: the legacy layout tells a transcript
	// changed since a ticket by its mtime (with its inode and size), and
	// the record's date given to a file changed in place with its size
	// kept would make it the ticket's base again, a stale job's run then
	// promoted over it.
	if stamp {
		at := time.Unix(0, rec.PromotedAt)
		p.at = &at
	}
	return p, nil
}

// mayStamp is nil when this process may set the transcript's mtime to a
// time of its choosing, as the run does once it has written the legacy
// files: only the file's owner or root may (futimens with a time), the
// right to write it (its mode, an ACL) not being enough. Else the refusal
// the run would meet there, found in the plan: the key fails before
// anything is written, and a dry run fails it too.
func mayStamp(kd *os.File) error {
	st, err := fsat.LstatAt(kd, legacy.TranscriptName)
	if err != nil {
		return nil // the run's own open of it says what is wrong
	}
	if euid := os.Geteuid(); euid != 0 && st.Uid != uint32(euid) {
		return &os.PathError{Op: "futimens", Path: fsat.Join(kd, legacy.TranscriptName), Err: fmt.Errorf(
			"%w: uid %d owns it, and only its owner or root may set its mtime to the promotion's, the legacy layout's clock; give it to the key dir's owner (chown) and run again", unix.EPERM, st.Uid)}
	}
	return nil
}

// fullInTheWay is the error of a directory with entries where the rollback
// puts or removes a legacy file: at a file's name, or, for one it writes,
// at its temp's. Neither is ever removed (only its owner can say what its
// contents are), so the run would fail there; found in the plan, the key
// fails before anything is written, and a dry run fails it too.
func fullInTheWay(kd *os.File, k *keyScan, files []legacyFile) error {
	for _, f := range files {
		names := []string{f.name}
		if f.content != nil {
			names = append(names, f.name+legacy.TempSuffix)
		}
		for _, n := range names {
			if k.full[n] {
				return &os.PathError{Op: "write", Path: fsat.Join(kd, n), Err: errFullDir}
			}
		}
	}
	return nil
}

// lockShared is a dry run's lock: meta.db's shared lock, which never
// writes, and its sidecars with a landed promotion's pending entry
// dropped. A promotion still in flight is reported, not rolled forward.
func (m *migrator) lockShared(kd *os.File, p *plan) (db.Sidecars, error) {
	d, sc, err := db.OpenSidecars(kd, m.dbOptions(), false)
	if errors.Is(err, os.ErrNotExist) {
		err = nil // gone since the listing: a rival rolled the key back
	}
	if err != nil || d == nil {
		return sc, p.noLock(err)
	}
	p.lock = d
	sc = settled(kd, sc)
	if err := PendingTempNotRegular(kd, sc.Pending); err != nil {
		return sc, err // the run fails the key so
	}
	whole := false
	if sc.Pending != nil {
		if whole, err = store.PendingTempWhole(m.ctx, kd, sc.Pending); err != nil {
			return sc, err
		}
		// The run's roll-forward, a write in the key dir (a rename; of a
		// damaged temp, its removal), comes before it judges the key: one
		// this process may not write in fails the key there, whatever the
		// plan would have judged after (a directory in the way, a
		// transcript it may not stamp), and so here, in the run's words.
		if err := MayOpenMetaDB(kd); err != nil {
			return sc, err // the run's open for writing comes first
		}
		if err := RollForwardRefused(kd, sc.Pending, whole); err != nil {
			return sc, err
		}
	}
	p.Removed = append(p.Removed, strayStoreTemps(kd, sc.Pending)...)
	if sc.Pending != nil {
		if !whole {
			// The run's roll-forward removes it and leaves the record
			// pending: the plan is made from the key as it then is.
			p.Oddities = append(p.Oddities, Oddity{db.FileName, fmt.Sprintf("a pending promotion (gen %d) whose temp was not what its commit recorded", sc.Pending.Gen), "its temp would be removed by the roll-forward first, the record left pending"})
			sc.Pending = nil
			return sc, nil
		}
		if err := RollForwardBlocked(kd, sc.Pending); err != nil {
			return sc, err // the run's roll-forward fails so
		}
		p.Oddities = append(p.Oddities, Oddity{db.FileName, fmt.Sprintf("a pending promotion (gen %d)", sc.Pending.Gen), "would be rolled forward first"})
	}
	return sc, nil
}

// RollForwardRefused is the error the run's roll-forward of p (whole: its
// temp is what its commit recorded) meets in kd where this process may
// not make, rename or remove entries there (fsat.AccessAt), as the run
// says it: the rename of a whole temp over current.jsonl refused; of a
// damaged one, whose removal the store's roll-forward does not report,
// meta.db's promotion still in flight after it (errNotSettled); nil
// where it may. The fleet's migrations ask it too.
func RollForwardRefused(kd *os.File, p *db.Pending, whole bool) error {
	err := fsat.AccessAt(kd, ".", unix.W_OK|unix.X_OK)
	var pe *os.PathError
	if err == nil || !errors.As(err, &pe) {
		return err
	}
	if whole {
		return &os.LinkError{Op: "rename", Old: fsat.Join(kd, p.Tmp), New: fsat.Join(kd, store.TranscriptName), Err: pe.Err}
	}
	return fmt.Errorf("%s: %w", fsat.Join(kd, db.FileName), errNotSettled)
}

// lockSettled takes the exclusive lock of the meta.db that is there now,
// with no promotion in flight under it, and reads its sidecars. A pending
// promotion, or promotion temps, are the store's to settle, under its own
// lock (store.RollForward): the temp is renamed into place or found gone,
// and the temps are swept; then the lock is taken again. It sets p.made
// (and Already) when the file under the lock holds no record and is not
// the one the call began with: a rival rolled the key back while this
// call waited, and an open made the file again (the store's writers
// create a missing meta.db). Such a file is no interrupted migration, and
// the key was converted by the rival.
func (m *migrator) lockSettled(kd *os.File, key string, storeTemps bool, p *plan) (sc db.Sidecars, err error) {
	if _, err := fsat.LstatAt(kd, db.FileName); errors.Is(err, unix.ENOENT) {
		return sc, p.noLock(nil)
	} else if err != nil {
		return sc, err
	}
	before := lockonly.Look(kd)
	defer before.Close()
	lock := func() (err error) {
		p.lock, sc, p.made, err = m.lockExisting(kd, key, before)
		if p.lock == nil {
			return p.noLock(err)
		}
		if p.made {
			p.Action = Already
		}
		return nil
	}
	if err := lock(); err != nil || p.lock == nil || p.made || sc.Pending == nil && !storeTemps {
		return sc, err
	}
	if err := PendingTempNotRegular(kd, sc.Pending); err != nil {
		// No roll-forward settles it: failed under the lock, before any.
		return sc, err
	}
	// Listed under the lock: once it is let go, a promotion may stage a
	// temp, commit and be killed before its rename, and the roll-forward
	// then renames that temp into place; listed then, it was reported
	// removed.
	stray := strayStoreTemps(kd, sc.Pending)
	// RollForward takes the key's lock itself, and the in-process lock
	// would make it wait for this one until its timeout.
	err = p.lock.Close()
	p.lock = nil
	if err != nil {
		return sc, err
	}
	if err := faults.At(faults.ToLegacyUnlocked); err != nil {
		return sc, err
	}
	if _, err := m.st.RollForwardContext(m.ctx, key); err != nil {
		return sc, p.noLock(err)
	}
	// The roll-forward swept the temps no record names: reported as
	// removed, as the dry run lists them.
	for _, n := range stray {
		if _, err := fsat.LstatAt(kd, n); errors.Is(err, unix.ENOENT) {
			p.Removed = append(p.Removed, n)
		}
	}
	// The key dir changed: a stop from here on is reported (convert).
	p.rolled = sc.Pending != nil || len(p.Removed) > 0
	rolled := -1
	if sc.Pending != nil {
		rolled = len(p.Oddities)
		p.Oddities = append(p.Oddities, Oddity{db.FileName, fmt.Sprintf("a pending promotion (gen %d)", sc.Pending.Gen), "rolled forward first"})
	}
	if err := faults.At(faults.ToLegacyRolledForward); err != nil {
		return sc, err
	}
	// Compared with the file before the roll forward too: a rival may
	// have rolled the key back between the two locks, and the store's
	// open or this one made the file again (two migrations at once
	// converted a key twice before this was checked here).
	if err := lock(); err != nil || p.lock == nil || p.made {
		return sc, err
	}
	if pend := recordedPending(p.lock); rolled >= 0 && pend != nil && sc.Pending == nil {
		// Still recorded, and its temp gone: the roll-forward found it
		// not what its commit recorded, and removed it.
		p.Oddities[rolled] = Oddity{db.FileName, fmt.Sprintf("a pending promotion (gen %d) whose temp was not what its commit recorded", pend.Gen), "its temp removed by the roll-forward first, the record left pending"}
	}
	if sc.Pending != nil {
		return sc, fmt.Errorf("%s: %w", fsat.Join(kd, db.FileName), errNotSettled)
	}
	return sc, nil
}

// lockExisting takes the exclusive lock of the meta.db that is there now
// and reads its sidecars, a landed promotion's pending entry dropped; d is
// nil when there is none. made says that the file holds no record and is
// not the file before found (lockonly.Before: held open by the caller, its
// inode number is its own; ext4 gives a freed number to the next file
// created, measured: unlink then create in one dir gets the same number,
// and the concurrency test saw it).
func (m *migrator) lockExisting(kd *os.File, key string, before lockonly.Before) (d *db.DB, sc db.Sidecars, made bool, err error) {
	if _, err := fsat.LstatAt(kd, db.FileName); err != nil {
		if errors.Is(err, unix.ENOENT) {
			err = nil
		}
		return nil, sc, false, err
	}
	d, sc, err = db.OpenSidecars(kd, m.writerOptions(kd, key), true)
	if err != nil {
		return nil, sc, false, err
	}
	sc = settled(kd, sc)
	return d, sc, !before.Is(kd, d) && sc == (db.Sidecars{}), nil
}

// recordedPending is the pending promotion d records, landed or not: nil
// when there is none, or when it cannot be read.
func recordedPending(d *db.DB) *db.Pending {
	var sc db.Sidecars
	if d.View(func(tx *db.Tx) (err error) { sc, err = tx.Sidecars(); return err }) != nil {
		return nil
	}
	return sc.Pending
}

// lostPrev is p, the pending promotion recorded in meta.db, when t, the
// transcript in place, is the generation before it (its Prev): the
// promotion committed and its temp was lost before the rename, and the
// store serves what is in place (its Accept, by the pending entry's
// Prev). It is nil otherwise.
func lostPrev(p *db.Pending, t *Transcript) *db.Pending {
	if p != nil && p.Prev != nil && p.Prev.Size == t.Size && p.Prev.CRC32C == uint64(t.CRC32C) {
		return p
	}
	return nil
}

// strayStoreTemps lists, sorted, the store's promotion temps in kd other
// than the one pending names (a promotion in flight, which is rolled
// forward, not removed): the roll-forward that settles the key before a
// rollback sweeps them. A temp is a regular file: the sweep leaves a
// link, a FIFO or a directory at such a name, and so does this list.
func strayStoreTemps(kd *os.File, pending *db.Pending) []string {
	names, err := fsat.ReadDirNames(kd)
	if err != nil {
		return nil
	}
	var out []string
	for _, n := range names {
		if !strings.HasPrefix(n, storeTempPrefix) || pending != nil && n == pending.Tmp {
			continue
		}
		if st, err := fsat.LstatAt(kd, n); err == nil && fsat.IsRegular(&st) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// settled is sc with a pending promotion that landed dropped: only one
// still in flight is the migration's to settle.
func settled(kd *os.File, sc db.Sidecars) db.Sidecars {
	if !store.PendingInFlight(kd, sc.Pending) {
		sc.Pending = nil
	}
	return sc
}

// applyLegacy carries out a ToLegacy plan under meta.db's exclusive lock.
// The legacy files are written through temps, fsynced, read back and
// renamed into place, the transcript's mtime is set and fsynced, and the
// directory fsynced (writeLegacy); only then is meta.db removed, while its
// lock is still held, so that no writer can slip a transaction in after
// the legacy files were written. At every instant each value is held by
// the legacy files or by meta.db, which overrides them while it exists.
func (m *migrator) applyLegacy(kd *os.File, p *plan) error {
	// Under the lock, once the key is done: debris a killed run left.
	defer func() { p.Removed = append(p.Removed, m.sweepMetaTemps(kd, true)...) }()
	switch {
	case p.made:
		// A file made while the plan waited holds nothing: removed
		// again, the key stays as the rival left it.
		_, err := m.removeDB(kd)
		return err
	case p.Action != Migrated:
		return nil
	case p.files != nil:
		// A failed write's report names what it changed, not what it
		// planned: the files renamed into place or removed before the
		// error, meta.db still there.
		var written, removed []string
		if err := writeLegacyDone(m.disk, kd, p.files, p.at, func(f legacyFile) {
			if f.content != nil {
				written = append(written, f.name)
			} else {
				removed = append(removed, f.name)
			}
		}); err != nil {
			p.Written = written
			p.Removed = slices.DeleteFunc(p.Removed, func(n string) bool {
				return n == db.FileName || slices.ContainsFunc(p.files, func(f legacyFile) bool { return f.name == n }) && !slices.Contains(removed, n)
			})
			return err
		}
	}
	if unlinked, err := m.removeDB(kd); err != nil {
		if !unlinked {
			// meta.db is still there: the report names it removed only
			// once it is gone (an error after the unlink, its fsync's,
			// leaves it gone, and listed).
			p.Removed = slices.DeleteFunc(p.Removed, func(n string) bool { return n == db.FileName })
		}
		return err
	}
	return nil
}

// removeDB unlinks meta.db and makes the unlink durable. unlinked is
// whether meta.db is gone, whatever err says.
func (m *migrator) removeDB(kd *os.File) (unlinked bool, err error) {
	if err := m.disk.Remove(kd, db.FileName); err != nil {
		return false, err
	}
	if err := faults.At(faults.ToLegacyDBRemoved); err != nil {
		return true, err
	}
	return true, m.disk.SyncDir(kd)
}
