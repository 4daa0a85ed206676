package migrate

import (
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/db"
	"sessdb/internal/fsat"
	"sessdb/store"
	"sessdb/store/legacy"
)

// A conversion is one direction of the migration, in two steps per key
// dir. plan lists the key dir, takes the lock the plan needs (write: the
// exclusive one, for a plan that will be applied; else a shared one, or
// none), reads what the plan is made of, and returns it with the lock
// still held. apply carries the plan out under that lock, with its own
// cleanup beside it. A dry run is the plan alone.
type conversion struct {
	name  string
	plan  func(m *migrator, kd *os.File, key string, write bool) (*plan, error)
	apply func(m *migrator, kd *os.File, p *plan) error
}

var (
	toDB     = conversion{"to-db", (*migrator).planDB, (*migrator).applyDB}
	toLegacy = conversion{"to-legacy", (*migrator).planLegacy, (*migrator).applyLegacy}
)

// A plan is what a conversion will do to one key dir, decided from what
// was read under the lock it needs, and the lock itself, which keeps the
// plan true until it is applied.
type plan struct {
	// Report is the plan as the run reports it. Apply acts on its Action,
	// Values and Removed, and may shorten Removed, add Oddities, or turn
	// the Action to Failed.
	Report
	// lock is meta.db, held from the listing the plan was made from until
	// the plan is applied: exclusively for a plan to apply, shared for a
	// dry run's. It is nil when the plan needed none: the entry was
	// skipped or found locked before a lock was taken, or a dry run found
	// no meta.db (none exists to lock without creating a file).
	lock *db.DB
	// made says that meta.db under lock was created while the plan was
	// made (by its own open, or by the store's after a rival removed the
	// file). It holds no record, so it vouches for nothing; apply takes it
	// away again unless ToDB commits the values to it.
	made bool
	// files are the legacy sidecars ToLegacy writes, or removes; nil when
	// meta.db held no record (its legacy files are the values already).
	files []legacyFile
	// at is the promotion time ToLegacy sets as the transcript's mtime;
	// nil when there is no record of one, or no transcript to set it on.
	at *time.Time
	// rolled says ToLegacy's roll-forward changed the key dir (a pending
	// promotion settled, stray temps swept) before the plan went on: a
	// stop after it is reported, not taken for a key left as it was.
	rolled bool
}

// fail turns the report's Action to Failed with err as the Cause. The first
// error wins: a failure's cleanup may fail too, but the first error is
// what left the key as it is. A nil err changes nothing.
func (r *Report) fail(err error) {
	if err != nil && r.Action != Failed {
		r.Action, r.Cause = Failed, err.Error()
	}
}

// noLock files an open that got no lock: a lock not had in time is Locked
// (a re-run picks the key up), no error at all means meta.db was gone (a
// rival converted the key meanwhile) and the key is Already done, and any
// other error is returned.
func (r *Report) noLock(err error) error {
	switch {
	case errors.Is(err, db.ErrLockTimeout):
		r.Action, r.Cause = Locked, err.Error()
		return nil
	case err == nil:
		r.Action = Already
	}
	return err
}

// legacyLocked plans nothing for a key with a fresh legacy lock: a legacy
// promotion may be writing it right now, so nothing is read or touched.
func (r *Report) legacyLocked(k *keyScan) {
	r.Action = Locked
	if k.lockAge < 0 {
		// Written by a clock that was ahead, it stays fresh until that
		// date is an hour past: stopping the workers does not end it.
		r.Cause = fmt.Sprintf("legacy lock is dated %s in the future (a clock that was ahead): it counts as held until an hour after that date; once no legacy worker runs, remove it by hand", k.lockSpan)
		return
	}
	r.Cause = fmt.Sprintf("legacy lock is %s old (younger than %s): a legacy promotion may be in flight; stop the legacy workers", k.lockSpan, LockStale)
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
		r.Action, r.Cause = Skipped, vanishedCause
	default:
		r.Action, r.Cause = Failed, err.Error()
	}
	return nil, false
}

// vanishedCause is the skip of a key dir that is no longer at its name.
const vanishedCause = "vanished"

// convert plans one entry of the root with c and, unless this is a dry
// run, applies the plan; every failure becomes the report's. cut says
// that the run's ctx stopped the plan (the read of a huge transcript)
// before anything was written: a meta.db the plan's open made is taken
// away again, and the key, left as it was, has no report to deliver
// unless ToLegacy's roll-forward changed it first (printed: the report,
// failed, says so).
func (m *migrator) convert(c conversion, name string) (_ Report, cut, printed bool) {
	r := Report{Key: name}
	kd, ok := m.openKey(name, &r)
	if !ok {
		return r, false, false
	}
	defer kd.Close()
	// The one place DryRun is read: a dry run's plan is made without
	// write (under a shared lock, or none), and it is not applied.
	write := !m.opts.DryRun
	p, err := c.plan(m, kd, name, write)
	if err != nil && m.ctx.Err() != nil && errors.Is(err, m.ctx.Err()) {
		if p.made && m.disk.Remove(kd, db.FileName) == nil {
			m.disk.SyncDir(kd)
		}
		if p.lock != nil {
			p.lock.Close()
		}
		if p.rolled {
			r := Report{Key: name, Oddities: p.Oddities, Removed: p.Removed}
			r.fail(fmt.Errorf("%w: nothing written, rolled forward only", m.ctx.Err()))
			return r, true, true
		}
		return Report{Key: name}, true, false
	}
	if err != nil && p.lock == nil && fsat.IsNotExist(err) && knownMoved(m.rootDir, name, kd) {
		// Removed or moved away while the plan waited for its lock (a
		// reap, check --quarantine): nothing of it was converted, and
		// there is nothing for a re-run to finish.
		p.Action, p.Cause, err = Skipped, vanishedCause, nil
	}
	p.fail(err)
	refused := false
	if !write && (p.Action == Migrated || p.Action == Already && len(p.Removed) > 0) {
		// The run writes in the key dir (meta.db made or written, legacy
		// files written, renamed or removed): one this user may not
		// write in fails there, nothing written. Asked as the run's
		// writes are judged, so that the plan fails the key as the run.
		var first func(error) error
		if c.name == toLegacy.name {
			first = firstLegacyWrite(kd, p)
		}
		if err := mayWrite(kd, first); err != nil {
			p.fail(err)
			// The run writes and removes nothing there, and its failed
			// report lists nothing so: nor does this one.
			p.Written, p.Removed, refused = nil, nil, true
		}
	}
	if !write && !refused && (p.lock != nil || p.Action == Migrated) && fsat.AccessAt(kd, ".", unix.W_OK|unix.X_OK) == nil {
		// What apply's cleanup would sweep under the lock the run would
		// hold: a dry run lists it, where the run may remove it. In a key
		// dir it may not write in (the mode, an ACL, a read-only mount),
		// which takes a key already in place, the run's sweep (unlinks)
		// removes nothing and lists nothing.
		p.Removed = append(p.Removed, m.sweepMetaTemps(kd, false)...)
	}
	if p.lock == nil {
		p.Key = name
		return p.Report, false, false // no lock, nothing to apply or to clean up
	}
	moved, merr := false, error(nil)
	if write {
		moved, merr = fsat.Moved(m.rootDir, name, kd)
	}
	if moved || merr != nil {
		// Moved aside (check --quarantine) while the plan waited for the
		// lock: the dir held is no longer the key, and a quarantine dir is
		// left as the quarantine left it. Only a meta.db this plan's open
		// made there is taken away again. A dir not known to be at its
		// name (the look failed) is treated as one moved aside, and the
		// key fails with the look's error: nothing is written in it.
		p.Report = Report{Action: Skipped, Cause: vanishedCause}
		if merr != nil {
			p.Report = Report{Action: Failed, Cause: merr.Error()}
		}
		if p.made && m.disk.Remove(kd, db.FileName) == nil {
			m.disk.SyncDir(kd)
		}
		p.fail(p.lock.Close())
		p.Key = name
		return p.Report, false, false
	}
	if write {
		// A failed plan is applied too: apply's cleanup is what takes
		// away a meta.db the plan's open made.
		p.fail(c.apply(m, kd, p))
	}
	// Released only now: apply and its cleanup ran under the lock.
	p.fail(p.lock.Close())
	p.Key = name
	return p.Report, false, false
}

// MayWrite is nil when this process may open kd's meta.db (if any) for
// writing and make, rename and remove entries in the key dir kd, as a
// run's writes would be judged (fsat.AccessAt: the mode, an ACL, a
// read-only mount); else the refusal, which a run meets there. meta.db is
// asked first: a run opens it before it writes anything in the key dir.
// A key dir with no meta.db refuses the run's first write there, its
// creation (a temp made and linked to meta.db), said as that create says
// it ("create <dir>/meta.db: .meta.db.tmp-<random>", the temp's random
// part being the run's to draw); one with a meta.db, as the look says it
// ("access <dir>"), the first write being the caller's to say. The dry
// runs of every direction ask it (fleet's too) of a key dir they plan to
// change.
func MayWrite(kd *os.File) error { return mayWrite(kd, nil) }

// mayWrite is MayWrite, a refusal of the key dir where meta.db is there
// said by first, where non-nil, from its cause (the errno): as the run's
// first write in the key dir says it.
func mayWrite(kd *os.File, first func(cause error) error) error {
	_, err := fsat.LstatAt(kd, db.FileName)
	if err == nil {
		if err := MayOpenMetaDB(kd); err != nil {
			return err
		}
	}
	aerr := fsat.AccessAt(kd, ".", unix.W_OK|unix.X_OK)
	if aerr == nil {
		return nil
	}
	var pe *os.PathError
	if errors.As(aerr, &pe) && pe.Op == "access" {
		switch {
		case fsat.IsNotExist(err):
			aerr = &os.PathError{Op: "create", Path: fsat.Join(kd, db.FileName), Err: fmt.Errorf("%s<random>: %w", db.TempPrefix, pe.Err)}
		case err == nil && first != nil:
			aerr = first(pe.Err)
		}
	}
	return fmt.Errorf("%w: a run may not write in the key dir and would fail the key there", aerr)
}

// firstLegacyWrite is the refusal, of cause, of the first write
// ToLegacy's apply of p makes in the key dir kd, as that write says it:
// the removal of a leftover temp of the first legacy file it writes, or
// that temp's create (writeLegacyDone's writeTemp); with none to write,
// the removal of the first legacy file it removes that is there; else
// meta.db's (removeDB).
func firstLegacyWrite(kd *os.File, p *plan) func(cause error) error {
	return func(cause error) error {
		said := func(op, name string) error { return &os.PathError{Op: op, Path: fsat.Join(kd, name), Err: cause} }
		there := func(name string) bool { _, err := fsat.LstatAt(kd, name); return err == nil }
		for _, f := range p.files {
			if f.content != nil {
				tmp := f.name + legacy.TempSuffix
				if there(tmp) {
					return said("remove", tmp)
				}
				return said("open", tmp)
			}
		}
		for _, f := range p.files {
			if there(f.name) {
				return said("remove", f.name)
			}
		}
		return said("remove", db.FileName)
	}
}

// MayOpenMetaDB is nil when this process may open kd's meta.db for
// writing, as a run's writer open would be judged (fsat.AccessAt); else
// the refusal, said as that open says it ("open <path>", not the look's
// "access <path>"), the same path and cause, then why. A meta.db with
// more than one name (a hard link) is given a file of its own by a
// writer's open first, a copy made in the key dir (db's ownFile): one
// this process may not write in refuses it, and so does a copy it may not
// give meta.db's owner and group (db.MayOwnCopy: not root, and meta.db
// another user's or of a group not its own), each said as that open says
// it ("copy <path>").
func MayOpenMetaDB(kd *os.File) error {
	if err := fsat.AccessAt(kd, db.FileName, unix.R_OK|unix.W_OK); err != nil {
		return fmt.Errorf("%w: a run may not open meta.db for writing and would fail the key there", fsat.SaidAs("open", err))
	}
	st, err := fsat.LstatAt(kd, db.FileName)
	if err != nil || !fsat.IsRegular(&st) || st.Nlink < 2 {
		return nil // the run's open meets what is wrong itself
	}
	var pe *os.PathError
	if err := fsat.AccessAt(kd, ".", unix.W_OK|unix.X_OK); errors.As(err, &pe) {
		return fmt.Errorf("%w: meta.db has %d names (a hard link), so a run's writer gives it a file of its own first, a copy in the key dir, and would fail the key there",
			&os.PathError{Op: "copy", Path: fsat.Join(kd, db.FileName), Err: pe.Err}, st.Nlink)
	} else if err != nil {
		return err
	}
	if err := db.MayOwnCopy(kd, &st); err != nil {
		return fmt.Errorf("%w: a run would fail the key there", &os.PathError{Op: "copy", Path: fsat.Join(kd, db.FileName), Err: err})
	}
	return nil
}

// knownMoved reports whether kd is known to be no longer at name under
// root: a look that failed is not known (the caller keeps its own error).
func knownMoved(root *os.File, name string, kd *os.File) bool {
	moved, err := fsat.Moved(root, name, kd)
	return err == nil && moved
}
