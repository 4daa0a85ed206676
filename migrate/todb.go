package migrate

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/faults"
	"sessdb/internal/fsat"
	"sessdb/store"
	"sessdb/store/legacy"
)

// toDB migrates one entry of the root; every failure becomes a report.
func (m *migrator) toDB(name string) Report {
	r := Report{Key: name}
	kd, ok := m.openKey(name, &r)
	if !ok {
		return r
	}
	defer kd.Close()
	if err := m.toDBKey(kd, &r); err != nil {
		r.Action, r.Cause = Failed, err.Error()
	}
	return r
}

// openKey opens a key dir without following a link, or says in r why the
// entry is skipped or failed.
func (m *migrator) openKey(name string, r *Report) (*os.File, bool) {
	if !store.ValidKey(name) {
		r.Action, r.Cause = Skipped, "not a key (want 32 lowercase hex characters)"
		return nil, false
	}
	kd, err := fsat.OpenDirAt(m.rootDir, name)
	switch {
	case err == nil:
		return kd, true
	case errors.Is(err, fsat.ErrNotDir):
		r.Action, r.Cause = Skipped, "not a real directory (a link, or not a directory): the store never follows it"
	case errors.Is(err, os.ErrNotExist):
		r.Action, r.Cause = Skipped, "vanished"
	default:
		r.Action, r.Cause = Failed, err.Error()
	}
	return nil, false
}

func (m *migrator) toDBKey(kd *os.File, r *Report) (err error) {
	k, err := scanKey(kd, m.now())
	if err != nil {
		return err
	}
	if k.freshLock() {
		legacyLocked(r, k)
		return nil
	}
	if !k.meta && !k.legacyLeft() && !k.regularTranscript() {
		r.Action, r.Cause = Skipped, "nothing to migrate: no legacy sidecar, lock, temp or transcript"
		return nil
	}

	// The dry run reads a key without meta.db with no lock at all (none
	// exists to take without creating a file) and one with meta.db under a
	// shared lock, which never writes.
	found := k.meta // before this call could create one
	if !found && m.opts.DryRun {
		return m.commitLegacy(kd, k, false, nil, r, nil)
	}
	d, prev, err := db.OpenSidecars(kd, m.dbOptions(), !m.opts.DryRun)
	if errors.Is(err, db.ErrLockTimeout) {
		r.Action, r.Cause = Locked, err.Error()
		return nil
	}
	if err != nil {
		return err
	}
	// A meta.db with any record is authoritative, as it is to the store.
	// One with none is a migration or a promotion that died before its
	// commit: the legacy files are the values, and the store judges the
	// key by them meanwhile. If this call created it and the values never
	// land, it is taken away again under its lock, so a failure leaves the
	// key as it was.
	empty := prev == (db.Sidecars{})
	undo := empty && !found && !m.opts.DryRun
	committed := false
	defer func() {
		if undo && !committed {
			if rerr := m.disk.Remove(kd, db.FileName); rerr == nil {
				m.disk.SyncDir(kd)
			}
		}
		if cerr := d.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	if !m.opts.DryRun {
		// Runs before the close above: under the lock, once the key is done.
		defer func() { r.Removed = append(r.Removed, m.sweepMetaTemps(kd)...) }()
	}
	// Listed again under the lock: a rival may have finished, or a legacy
	// worker come back, while this call waited.
	if k, err = scanKey(kd, m.now()); err != nil {
		return err
	}
	switch {
	case k.freshLock():
		legacyLocked(r, k)
		return nil
	case !empty:
		return m.finishRemoval(kd, k, r)
	case !k.legacyLeft() && !k.regularTranscript():
		r.Action, r.Cause = Already, "meta.db is empty and nothing legacy is beside it"
		if !found {
			r.Action, r.Cause = Skipped, "nothing to migrate: no legacy sidecar, lock, temp or transcript"
		}
		return nil
	}
	return m.commitLegacy(kd, k, found, d, r, &committed)
}

// legacyLocked reports a key with a fresh legacy lock: a legacy promotion
// may be writing it right now, so nothing is read or touched.
func legacyLocked(r *Report, k *keyScan) {
	r.Action = Locked
	r.Cause = fmt.Sprintf("legacy lock is %s old (younger than %s): a legacy promotion may be in flight; stop the legacy workers", k.lockAge.Round(1e9), LockStale)
}

// finishRemoval retires the legacy leftovers of a key whose meta.db already
// holds its values: a migration killed after its commit, or a key a new
// worker promoted beside legacy files (which meta.db overrides).
func (m *migrator) finishRemoval(kd *os.File, k *keyScan, r *Report) error {
	r.Action = Already
	if !k.legacyLeft() {
		return nil
	}
	r.Cause = "meta.db is authoritative: the legacy files beside it are leftovers"
	r.Removed = k.removable()
	r.Oddities = k.leftoverOddities()
	if m.opts.DryRun {
		return nil
	}
	return m.removeLegacy(kd, r)
}

// commitLegacy reads the legacy values (under d's lock when d is non-nil),
// commits them to d in one transaction, and only then removes the legacy
// files. With d nil (a dry run) it only reports. found says whether a
// meta.db was there before this call (one it creates is no oddity).
func (m *migrator) commitLegacy(kd *os.File, k *keyScan, found bool, d *db.DB, r *Report, committed *bool) error {
	v, odd := readLegacy(k)
	t, kind, err := transcriptID(kd, nil)
	if err != nil {
		return err
	}
	v.Transcript = t
	if t == nil {
		stays := gates.NotARegularFile
		if kind == "absent" {
			stays = gates.Absent
		}
		odd = append(odd, Oddity{legacy.TranscriptName, kind, fmt.Sprintf("not recorded: the key stays %s", stays)})
	}
	if found {
		odd = append(odd, Oddity{db.FileName, "empty (no record at all)", "an interrupted migration or promotion: the legacy values are written into it"})
	}
	odd = append(odd, k.leftoverOddities()...)
	r.Action, r.Values, r.Oddities, r.Removed = Migrated, &v, odd, k.removable()
	if d == nil || m.opts.DryRun {
		return nil
	}

	if err := m.fault(faults.ToDBLocked); err != nil {
		return err
	}
	sc := v.sidecars()
	if err := d.Update(func(tx *db.Tx) error { return putSidecars(tx, sc) }); err != nil {
		return err
	}
	*committed = true
	if err := m.fault(faults.ToDBCommitted); err != nil {
		return err
	}
	return m.removeLegacy(kd, r)
}

// putSidecars writes every sidecar of sc, deleting what it does not hold
// where the schema allows, and clears pending (legacy has none).
func putSidecars(tx *db.Tx, sc db.Sidecars) error {
	if sc.Transcript != nil {
		if err := tx.PutTranscript(*sc.Transcript); err != nil {
			return err
		}
	}
	if err := tx.PutPiVersion(*sc.PiVersion); err != nil {
		return err
	}
	if sc.Venue != nil {
		if err := tx.PutVenue(*sc.Venue); err != nil {
			return err
		}
	}
	if sc.ResumeChain != nil {
		if err := tx.PutResumeChain(*sc.ResumeChain); err != nil {
			return err
		}
	}
	if err := tx.PutContext(sc.Context); err != nil {
		return err
	}
	return tx.PutPending(nil)
}

// removeLegacy removes r.Removed and makes the removals durable. Each name
// is removed only after the db holding its value has committed, so at
// every instant one of the two holds it. A directory that is not empty is
// left where it is: it held no value, and only its owner can say what its
// contents are.
func (m *migrator) removeLegacy(kd *os.File, r *Report) error {
	kept := r.Removed[:0:0]
	for _, n := range r.Removed {
		err := m.disk.Remove(kd, n)
		if errors.Is(err, unix.ENOTEMPTY) || errors.Is(err, unix.EEXIST) {
			// Filled since the scan: left, as scan would have left it.
			r.Oddities = append(r.Oddities, Oddity{n, "a directory with entries", "left in place (it held no value; meta.db overrides it)"})
			continue
		}
		if err != nil {
			return err
		}
		kept = append(kept, n)
		if err := m.fault(faults.ToDBRemoved); err != nil {
			return err
		}
	}
	r.Removed = kept
	if err := m.disk.SyncDir(kd); err != nil {
		return err
	}
	return m.fault(faults.ToDBDirSynced)
}
