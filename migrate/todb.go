package migrate

import (
	"errors"
	"fmt"
	"math"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/access"
	"sessdb/internal/faults"
	"sessdb/internal/fsat"
	"sessdb/internal/lockonly"
	"sessdb/store/legacy"
)

// nothingToMigrate is the Cause of a key dir with no legacy state at all.
const nothingToMigrate = "nothing to migrate: no legacy sidecar, lock, temp or transcript"

// movedAsideCause is the skip of a key dir whose meta.db check --repair
// moved aside, and which has no new one yet.
const movedAsideCause = "meta.db was moved aside by check --repair: the key stays cold (meta-moved-aside) until check --repair --accept or its next promotion; nothing migrated"

// planDB decides what ToDB does to the key dir kd: commit the legacy
// values to meta.db and remove the legacy files (Migrated), remove the
// leftovers beside a meta.db that already holds the values (Already), or
// nothing. With write, the plan is read under meta.db's exclusive lock,
// and meta.db is created to be locked when there is none (bbolt's flock is
// the key's lock, so no lock exists without the file). Without write (a
// dry run), it is read under a shared lock, or none when there is no
// meta.db. The lock, when taken, is held in the plan even on error: the
// cleanup of apply needs it.
func (m *migrator) planDB(kd *os.File, name string, write bool) (*plan, error) {
	p := &plan{}
	k, err := scanKey(kd, m.now())
	switch {
	case err != nil:
		return p, err
	case k.freshLock():
		p.legacyLocked(k)
		return p, nil
	case !k.meta && k.movedAside:
		// The store trusts no stamp of it (meta-moved-aside) until an
		// operator accepts the transcript or a job promotes one: a
		// meta.db made from the legacy files left beside it would.
		p.Action, p.Cause = Skipped, movedAsideCause
		return p, nil
	case !k.meta && !k.legacyLeft() && !k.regularTranscript():
		p.Action, p.Cause = Skipped, nothingToMigrate
		return p, nil
	}
	if !k.meta {
		// Judged before the open below makes a meta.db for the lock,
		// and again under it.
		if err := m.ownerMayRead(kd, name, k); err != nil {
			return p, err
		}
	}
	found := k.meta // before the open below may create one
	if found && write && m.alreadyInDB(kd, name, p) {
		return p, nil
	}
	before := lockonly.Look(kd)
	defer before.Close()
	if found || write {
		d, sc, err := db.OpenSidecars(kd, m.writerOptions(kd, name), write)
		if err != nil {
			return p, p.noLock(err)
		}
		p.lock = d
		// A meta.db with any record is authoritative, as it is to the
		// store. One with none is a migration or a promotion that died
		// before its commit: the legacy files are the values, and the
		// store judges the key by them meanwhile.
		empty := sc == (db.Sidecars{})
		// Made by this open for its lock (the one found, if any, was a
		// rival's lock file, a quarantine's or a reap's, removed while the
		// open waited), and holding nothing.
		p.made = write && before.MadeByOpen(kd, d, sc)
		found = found && !p.made
		// Listed again under the lock: a rival may have finished, or a
		// legacy worker come back, while this call waited.
		if k, err = scanKey(kd, m.now()); err != nil {
			return p, err
		}
		switch {
		case k.freshLock():
			p.legacyLocked(k)
			return p, nil
		case !empty:
			// A migration killed after its commit, or a key a new
			// worker promoted beside legacy files: only leftovers remain.
			p.Action = Already
			if k.legacyLeft() {
				p.Cause = "meta.db is authoritative: the legacy files beside it are leftovers"
				p.Removed, p.Oddities = k.removable(), k.leftoverOddities()
			}
			return p, nil
		case k.movedAside:
			// An empty meta.db beside a moved-aside one is a lock's (a
			// kill, or a power cut that undid its removal): the key is
			// still cold, and the legacy files still stale.
			p.Action, p.Cause = Skipped, movedAsideCause
			return p, nil
		case !k.legacyLeft() && !k.regularTranscript():
			p.Action, p.Cause = Already, "meta.db is empty and nothing legacy is beside it"
			if !found {
				p.Action, p.Cause = Skipped, nothingToMigrate
			}
			return p, nil
		}
	}

	if err := m.ownerMayRead(kd, name, k); err != nil {
		return p, err
	}
	v, odd, err := readLegacy(k)
	if err != nil {
		return p, err
	}
	t, kind, err := transcriptID(m.ctx, kd, math.MaxInt64)
	if err != nil {
		return p, err
	}
	v.Transcript = t
	if t != nil && (db.RecordedAt(t.PromotedAt) == math.MaxInt64 || db.RecordedAt(t.PromotedAt) == math.MinInt64) {
		odd = append(odd, Oddity{legacy.TranscriptName, "an mtime beyond the years 1678 to 2262", fmt.Sprintf("promoted %s, the nearest time meta.db holds (the TTL reads it as it read the mtime)", t.PromotedAt.Format(time.RFC3339Nano))})
	}
	if t == nil {
		stays := gates.NotARegularFile
		if kind == "absent" {
			stays = gates.Absent
		}
		odd = append(odd, Oddity{legacy.TranscriptName, kind, fmt.Sprintf("not recorded: the key stays %s", stays)})
	}
	if found { // one this run creates is no oddity
		odd = append(odd, Oddity{db.FileName, "empty (no record at all)", "an interrupted migration or promotion: the legacy values are written into it"})
	}
	odd = append(odd, k.leftoverOddities()...)
	p.Action, p.Values, p.Oddities, p.Removed = Migrated, &v, odd, k.removable()
	return p, nil
}

// alreadyInDB reports whether the key dir kd is already in meta.db with
// nothing beside it to remove, read under the shared lock as a dry run
// reads it; if so, p is Already and holds that lock. A re-run over a
// finished root changes nothing and takes no key's exclusive lock: the
// workers of a rolling upgrade not yet upgraded, or a rollback
// to them, still read every key of an older schema (a writer's open
// upgraded it, before the first write did). A lock not had in time is
// Locked, as in a dry run. Anything else (legacy leftovers, an empty
// meta.db, a lock file, an open that fails) is the writer's to judge.
func (m *migrator) alreadyInDB(kd *os.File, name string, p *plan) bool {
	d, sc, err := db.OpenSidecars(kd, m.writerOptions(kd, name), false)
	if errors.Is(err, db.ErrLockTimeout) {
		// Held for the whole timeout by a writer: the key is locked, as
		// its dry run reports it, without a second wait for the writer's
		// lock.
		p.noLock(err)
		return true
	}
	if err != nil {
		return false
	}
	// Listed under the lock: a legacy worker may have come back.
	if k, err := scanKey(kd, m.now()); err != nil || sc == (db.Sidecars{}) || k.freshLock() || k.legacyLeft() {
		d.Close()
		return false
	}
	p.lock, p.Action = d, Already
	return true
}

// applyDB carries out a ToDB plan under meta.db's exclusive lock. The
// values are committed in one transaction (bbolt fsyncs it), and only then
// are the legacy files removed and the directory fsynced: at every instant
// each value is held by the legacy files or by a committed meta.db, and a
// kill at any fault point leaves a key that a re-run finishes.
func (m *migrator) applyDB(kd *os.File, p *plan) error {
	committed := false
	defer func() {
		// Under the lock, once the key is done: debris a killed run left.
		p.Removed = append(p.Removed, m.sweepMetaTemps(kd, true)...)
		// A meta.db this plan created holds no value until the commit;
		// taken away again under its lock, it leaves the key as it was.
		// Left in place if that fails: empty, it vouches for nothing.
		if p.made && !committed {
			if m.disk.Remove(kd, db.FileName) == nil {
				m.disk.SyncDir(kd)
			}
		}
	}()
	switch {
	case p.Action == Already && len(p.Removed) > 0:
		return m.removeLegacy(kd, &p.Report)
	case p.Action != Migrated:
		return nil
	}
	// Until the commit, nothing the plan names is removed: a failure
	// reports none.
	if err := faults.At(faults.ToDBLocked); err != nil {
		p.Removed = nil
		return err
	}
	sc := p.Values.sidecars()
	// Pending nil: legacy has no promotion in flight.
	if err := p.lock.Update(func(tx *db.Tx) error { return tx.PutSidecars(sc) }); err != nil {
		p.Removed = nil
		return err
	}
	committed = true
	if err := faults.At(faults.ToDBCommitted); err != nil {
		p.Removed = nil
		return err
	}
	return m.removeLegacy(kd, &p.Report)
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
		// ENOTEMPTY on Linux, EEXIST where POSIX allows it instead: filled
		// since the scan, so left, as the scan would have left it.
		if errors.Is(err, unix.ENOTEMPTY) || errors.Is(err, unix.EEXIST) {
			r.Oddities = append(r.Oddities, Oddity{n, "a directory with entries", "left in place (it held no value; meta.db overrides it)"})
			continue
		}
		if err != nil {
			r.Removed = kept // what was removed, not what was planned
			return err
		}
		kept = append(kept, n)
		if err := faults.At(faults.ToDBRemoved); err != nil {
			r.Removed = kept
			return err
		}
	}
	r.Removed = kept
	// One fsync for all the removals, before the key is reported done: a
	// power cut may bring any of them back until it (harmless: meta.db
	// overrides them), never once a report said they were gone.
	if err := m.disk.SyncDir(kd); err != nil {
		return err
	}
	return faults.At(faults.ToDBDirSynced)
}

// ownerMayRead fails a key with a legacy sidecar the sessions root's owner
// may not read (by its mode, or, of one root owns, its group and others'
// bits or its ACL: access.JudgeAt), as the owner's own migration fails it
// on the read (Observed.NotRead). Root reads it all the same: run as root
// in a worker's root, the migration carried a value the worker's resolves
// read as no value (a venue or pi-version so cold-starts the key), and
// the key it had cold-started then resumed. So is a key dir (kd, name)
// root owns in a root another user owns (made by a legacy worker run as
// root, 0755, its files 0644, which the worker's resolves read and
// resumed), where the migration runs as root: the meta.db root made there
// was root's (the dir's owner's, 0600), and every resolve of the key by
// the worker failed after it. Run as anyone else (the worker), the
// migration makes meta.db its own, and such a key dir fails only where
// the root's owner may not write in it (the run's create of meta.db
// would fail, its dry run said migrate): one it may write in (0777, a
// legacy worker run as root under umask 0) migrates, as it did before,
// and the worker's resolves resume the key. A root root owns judges
// nothing (root may use anything).
func (m *migrator) ownerMayRead(kd *os.File, name string, k *keyScan) error {
	owner, ok := access.OwnerOf(m.rootDir)
	if !ok {
		return nil
	}
	if st, err := fsat.Fstat(kd); err == nil && st.Uid == 0 && owner.UID != 0 {
		mode := uint32(st.Mode) & 0o7777
		if unix.Geteuid() == 0 {
			return &os.PathError{Op: "migrate", Path: kd.Name(), Err: fmt.Errorf("mode %04o, uid 0: a key dir root owns in a root uid %d owns, migrated as root: the meta.db made in it would be root's (what root makes is the dir's owner's), which that user's workers may not open, so every resolve of the key would fail; give the key dir to the root's owner (check names it), and run again", mode, owner.UID)}
		}
		if _, lacks := access.JudgeAt(m.rootDir, name, &st, 0o300, &owner); lacks != 0 {
			return &os.PathError{Op: "migrate", Path: kd.Name(), Err: fmt.Errorf("mode %04o, uid 0: a key dir root owns, which the sessions root's owner (uid %d) may not %s: no meta.db can be made in it; give the key dir to the root's owner (as root: chown -R; check names it), and run again", mode, owner.UID, access.Verbs(lacks, true))}
		}
	}
	for _, n := range sidecarNames {
		st, present := k.stats[n]
		if !present || !fsat.IsRegular(&st) {
			continue
		}
		modeLacks, ownerLacks := access.JudgeAt(kd, n, &st, 0o400, &owner)
		if (modeLacks|ownerLacks)&0o400 != 0 {
			return &os.PathError{Op: "read", Path: fsat.Join(kd, n), Err: fmt.Errorf("mode %04o, uid %d: the sessions root's owner (uid %d) may not read it, so its workers read it as no value: migrated, its value would change the key's verdict; give it to the root's owner (check names it), and run again", uint32(st.Mode)&0o7777, st.Uid, owner.UID)}
		}
	}
	return nil
}
