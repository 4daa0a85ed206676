package migrate

import (
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/db"
	"sessdb/internal/faults"
	"sessdb/internal/fsat"
	"sessdb/store"
	"sessdb/store/legacy"
)

// toLegacy rolls one entry of the root back; every failure is a report.
func (m *migrator) toLegacy(name string) Report {
	r := Report{Key: name}
	kd, ok := m.openKey(name, &r)
	if !ok {
		return r
	}
	defer kd.Close()
	if err := m.toLegacyKey(name, kd, &r); err != nil {
		r.Action, r.Cause = Failed, err.Error()
	}
	return r
}

func (m *migrator) toLegacyKey(key string, kd *os.File, r *Report) error {
	k, err := scanKey(kd, m.now())
	if err != nil {
		return err
	}
	if !k.meta {
		r.Action = Already
		return nil
	}
	if k.freshLock() {
		legacyLocked(r, k)
		return nil
	}
	if m.opts.DryRun {
		return m.planLegacy(kd, k, r)
	}
	d, sc, recreated, err := m.openExisting(kd)
	if d == nil {
		return lockedOr(r, err)
	}
	if recreated && sc == (db.Sidecars{}) {
		// Rolled back by a rival while this call waited, and made again
		// empty by this open: removed again under its lock.
		err := m.removeDB(kd)
		d.Close()
		return lockedOr(r, err)
	}
	if sc.Pending != nil || k.storeTemps {
		// The store settles its own protocol: the pending temp is renamed
		// into place (or found gone), and promotion temps are swept.
		d.Close()
		if _, err := m.st.RollForward(key); err != nil {
			return lockedOr(r, err)
		}
		if sc.Pending != nil {
			r.Oddities = append(r.Oddities, Oddity{db.FileName, fmt.Sprintf("a pending promotion (gen %d)", sc.Pending.Gen), "rolled forward first"})
		}
		if err := m.fault(faults.ToLegacyRolledForward); err != nil {
			return err
		}
		if d, sc, _, err = m.openExisting(kd); d == nil {
			return lockedOr(r, err)
		}
		if sc.Pending != nil {
			d.Close()
			return fmt.Errorf("%s: a pending promotion was not settled", fsat.Join(kd, db.FileName))
		}
	}
	defer d.Close()
	// Runs before the close: under the lock, once the key is done.
	defer func() { r.Removed = append(r.Removed, m.sweepMetaTemps(kd)...) }()
	if k, err = scanKey(kd, m.now()); err != nil {
		return err
	}
	if k.freshLock() { // a legacy worker came back while this call waited
		legacyLocked(r, k)
		return nil
	}
	files, at, done, err := m.legacyValues(kd, k, sc, r)
	if err != nil || done {
		return err
	}
	if err := writeLegacy(m.disk, kd, files, at, m.fault); err != nil {
		return err
	}
	return m.removeDB(kd)
}

// lockedOr files a lock timeout as Locked and returns any other error; with
// no error, meta.db was gone: a rival rolled the key back meanwhile.
func lockedOr(r *Report, err error) error {
	switch {
	case errors.Is(err, db.ErrLockTimeout):
		r.Action, r.Cause = Locked, err.Error()
		return nil
	case err == nil:
		r.Action = Already
	}
	return err
}

// openExisting takes the exclusive lock of the meta.db that is there now,
// and reads its sidecars; d is nil when there is none. db.OpenWriter
// creates a missing file, so recreated says whether the name was removed
// and made again while this call waited (a rival's rollback, then this
// open). The inode number alone cannot say it: ext4 gives a freed inode
// number to the next file created (measured: unlink then create in one
// dir gets the same number, and the concurrency test saw it), so the
// change time is compared too.
func (m *migrator) openExisting(kd *os.File) (d *db.DB, sc db.Sidecars, recreated bool, err error) {
	before, err := fsat.LstatAt(kd, db.FileName)
	if errors.Is(err, unix.ENOENT) {
		return nil, sc, false, nil
	}
	if err != nil {
		return nil, sc, false, err
	}
	d, sc, err = db.OpenSidecars(kd, m.dbOptions(), true)
	if err != nil {
		return nil, sc, false, err
	}
	sc = settled(kd, sc)
	now, err := fsat.LstatAt(kd, db.FileName)
	if err != nil {
		d.Close()
		return nil, sc, false, err
	}
	recreated = now.Ino != before.Ino || now.Dev != before.Dev || now.Ctim != before.Ctim
	return d, sc, recreated, nil
}

// removeDB unlinks meta.db while its lock is still held, so that no writer
// can slip a transaction in after the legacy files were written.
func (m *migrator) removeDB(kd *os.File) error {
	if err := m.disk.Remove(kd, db.FileName); err != nil {
		return err
	}
	if err := m.fault(faults.ToLegacyDBRemoved); err != nil {
		return err
	}
	return m.disk.SyncDir(kd)
}

// legacyValues decides what the legacy files will say, fills r, and
// returns the files and the transcript mtime to write. done is true when
// there was nothing to write and meta.db alone has been removed (or, in a
// dry run, would be).
func (m *migrator) legacyValues(kd *os.File, k *keyScan, sc db.Sidecars, r *Report) (files []legacyFile, at *time.Time, done bool, err error) {
	if sc == (db.Sidecars{}) {
		// The forward rule read backwards: a meta.db with no record at all
		// is a migration or promotion that never committed; whatever
		// legacy files are beside it are the values, and an absent
		// pi-version means what an empty one does.
		r.Action, r.Removed = Migrated, []string{db.FileName}
		r.Oddities = append(r.Oddities, Oddity{db.FileName, "empty (no record at all)", "an interrupted migration or promotion: only meta.db is removed; legacy files beside it hold the values"})
		if m.opts.DryRun {
			return nil, nil, true, nil
		}
		return nil, nil, true, m.removeDB(kd)
	}
	v := valuesOf(sc)
	t, _, err := transcriptID(kd, nil)
	if err != nil {
		return nil, nil, false, err
	}
	rec := sc.Transcript
	if t != nil && t.Size > 0 && sc.Pending == nil &&
		(rec == nil || rec.Size != t.Size || rec.CRC32C != uint64(t.CRC32C)) {
		// meta.db cold-starts this transcript (transcript-replaced); the
		// legacy layout has no record to compare, so the venue says it.
		p := legacy.PendingVenue
		v.Venue = &p
		r.Oddities = append(r.Oddities, Oddity{legacy.TranscriptName, "does not match its record in meta.db", `venue stamped "(pending)" so the key stays cold, as it was`})
	}
	files, odd, err := legacyPlan(kd, v)
	if err != nil {
		return nil, nil, false, err
	}
	r.Action, r.Values = Migrated, &v
	r.Oddities = append(r.Oddities, odd...)
	for _, f := range files {
		if f.content != nil {
			r.Written = append(r.Written, f.name)
		} else if k.present(f.name) {
			r.Removed = append(r.Removed, f.name)
		}
	}
	r.Removed = append(r.Removed, db.FileName)
	if rec != nil && t != nil {
		p := time.Unix(0, rec.PromotedAt)
		at = &p
	}
	return files, at, false, nil
}

// planLegacy is the dry run of toLegacyKey: it reads meta.db under a
// shared lock and reports what would be written.
func (m *migrator) planLegacy(kd *os.File, k *keyScan, r *Report) error {
	d, sc, err := db.OpenSidecars(kd, m.dbOptions(), false)
	if errors.Is(err, os.ErrNotExist) {
		r.Action = Already
		return nil
	}
	if errors.Is(err, db.ErrLockTimeout) {
		r.Action, r.Cause = Locked, err.Error()
		return nil
	}
	if err != nil {
		return err
	}
	defer d.Close()
	sc = settled(kd, sc)
	if sc.Pending != nil {
		r.Oddities = append(r.Oddities, Oddity{db.FileName, fmt.Sprintf("a pending promotion (gen %d)", sc.Pending.Gen), "would be rolled forward first"})
	}
	_, _, _, err = m.legacyValues(kd, k, sc, r)
	return err
}

// settled is sc with a pending promotion that landed dropped: only one
// still in flight is the migration's to settle.
func settled(kd *os.File, sc db.Sidecars) db.Sidecars {
	if !store.PendingInFlight(kd, sc.Pending) {
		sc.Pending = nil
	}
	return sc
}
