package fleet

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"

	"sessdb/db"
	"sessdb/fleet/etcdmeta"
	"sessdb/fleet/internal/sharedfs"
	"sessdb/fleet/shared"
	"sessdb/internal/faults"
	"sessdb/internal/fsat"
	"sessdb/internal/lockonly"
	"sessdb/migrate"
	"sessdb/store"
)

// genFile is the generation an etcd record names, open for the copy.
type genFile struct {
	f    *os.File
	size int64
	sum  uint32
}

// fromEtcd writes one etcd key into its key dir under root; end says
// whether ctx's end cut it short (see walk).
func (m *migration) fromEtcd(ctx context.Context, it etcdmeta.Item) (r MigrateReport, end keyEnd) {
	r.Key = it.Key
	switch {
	case errors.Is(it.Err, etcdmeta.ErrInvalidKey):
		r.Action, r.Cause = migrate.Skipped, "not a key (want 32 lowercase hex characters)"
		return r, ran
	case it.Err != nil:
		fail(&r, fmt.Errorf("%w: left in etcd (the fleet reads it as meta-unreadable)", it.Err))
		return r, ran
	}
	if err := m.notTried(); err != nil {
		fail(&r, err)
		return r, ran
	}
	if err := m.b.at(hookMigrateRead, it.Key); err != nil {
		fail(&r, err)
		return r, ran
	}
	st, err := m.b.readIn(ctx, it.Key, m.b.meta.Get)
	switch {
	case stopped(ctx, err) != nil:
		return r, stopUnprinted
	case err != nil:
		m.failEtcd(ctx, &r, err, "")
		return r, ran
	case st.Rev == 0:
		r.Action, r.Cause = migrate.Skipped, "vanished: its record left etcd after the listing"
		return r, ran
	}
	r.Values = valuesOf(st.Record)
	src, cut := m.openGeneration(ctx, it.Key, st.Record.Transcript, &r)
	if src != nil {
		defer src.f.Close()
	}
	if cut {
		return r, stopUnprinted // stopped as it read the generation, nothing done
	}
	if r.Action != "" {
		return r, ran
	}
	if m.rootDir == nil { // a dry run on a root yet to be made
		r.Action, r.Written = migrate.Migrated, writtenFor(st.Record)
		return r, ran
	}
	kd, madeDir := m.openDestination(it.Key, st.Record, &r)
	if kd == nil {
		return r, ran
	}
	defer kd.Close()
	return r, m.intoKeyDir(ctx, kd, madeDir, st, src, &r)
}

func writtenFor(rec etcdmeta.Record) []string {
	if rec.Transcript == nil {
		return []string{db.FileName}
	}
	return []string{store.TranscriptName, db.FileName}
}

// openGeneration opens the file rec names and reads it for its size and
// CRC32C, or says in r why the key is not written; nil with no Action for
// a record without a transcript. cut says ctx's end stopped the read.
func (m *migration) openGeneration(ctx context.Context, key string, t *etcdmeta.Transcript, r *MigrateReport) (_ *genFile, cut bool) {
	if t == nil {
		return nil, false
	}
	if k, gen, ok := shared.ParseName(t.File); !ok || k != key || gen != t.Gen {
		r.Action, r.Cause = migrate.Failed, fmt.Sprintf("the record names %q, not a file of this key's gen %d: left in etcd (the fleet reads it as meta-unreadable)", t.File, t.Gen)
		return nil, false
	}
	f, err := shared.Open(m.b.dir, t.File)
	if err != nil && !errors.Is(err, shared.ErrNotRegular) {
		// The dir itself gone is no generation lost: it is whole on the
		// export, and a resolve is store-unavailable.
		if err := shared.DirErr(m.b.dir); err != nil {
			fail(r, fmt.Errorf("%w: left in etcd", err))
			return nil, false
		}
	}
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, unix.ESTALE):
		r.Action, r.Cause = migrate.Failed, fmt.Sprintf("the generation the record names is gone (%v): left in etcd (the fleet cold-starts it as transcript-replaced)", err)
		return nil, false
	case errors.Is(err, shared.ErrNotRegular):
		r.Action, r.Cause = migrate.Failed, fmt.Sprintf("%v: left in etcd", err)
		return nil, false
	case err != nil:
		fail(r, err)
		return nil, false
	}
	g := &genFile{f: f}
	if g.size, g.sum, err = checksum(ctx, f); err != nil {
		if stopped(ctx, err) != nil {
			return g, true
		}
		if derr := shared.DirErr(m.b.dir); derr != nil {
			err = derr
		}
		fail(r, err)
		return g, false
	}
	if g.size != t.Size || uint64(g.sum) != t.CRC32C {
		odd(r, t.File, fmt.Sprintf("%d bytes, crc32c %s: does not match its record", g.size, store.Checksum(g.sum)),
			"copied as it is: the store cold-starts it as transcript-replaced, as the fleet does")
	}
	return g, false
}

// openDestination opens key's dir under the root, made (and its name made
// durable) unless this is a dry run, or says in r why the key is not
// written; nil when a dry run finds no key dir, with r then Migrated.
// madeDir says this run's mkdir made it.
func (m *migration) openDestination(key string, rec etcdmeta.Record, r *MigrateReport) (_ *os.File, madeDir bool) {
	made := false
	if !m.opts.DryRun {
		var err error
		if made, err = sharedfs.FS().Mkdir(m.rootDir, key, 0o700); err != nil {
			fail(r, err)
			return nil, false
		}
	}
	madeDir = made
	kd, err := fsat.OpenDirAt(m.rootDir, key)
	switch {
	case err == nil && !m.opts.DryRun:
		// The key dir's name is durable before anything is written in it,
		// as a promotion's (store's openKeyDirForWrite): one found with
		// no meta.db may be another writer's, made just now and not yet
		// fsynced into the root (a host's first promotion of the key, a
		// second run), and this run must not report the key migrated on
		// that writer's fsync. One with a meta.db is durably named: its
		// maker fsynced the root before it made meta.db.
		if !made {
			_, lerr := fsat.LstatAt(kd, db.FileName)
			made = fsat.IsNotExist(lerr)
		}
		if made {
			if err := sharedfs.FS().SyncDir(m.rootDir); err != nil {
				kd.Close()
				fail(r, err)
				return nil, false
			}
		}
		return kd, madeDir
	case err == nil:
		return kd, false
	case errors.Is(err, fsat.ErrNotDir):
		r.Action, r.Cause = Conflict, "the key dir is a link or not a directory: the store never follows it; left alone"
	case m.opts.DryRun && errors.Is(err, os.ErrNotExist):
		// The run makes the key dir in the root: refused, it fails the key.
		// Said as the run's mkdir says it.
		if err := fsat.AccessAt(m.rootDir, ".", unix.W_OK|unix.X_OK); err != nil {
			fail(r, fmt.Errorf("%w: a run may not make the key dir in the root and would fail the key there", saidAs("mkdir", fsat.Join(m.rootDir, key), err)))
			return nil, false
		}
		r.Action, r.Written = migrate.Migrated, writtenFor(rec)
	default:
		fail(r, err)
	}
	return nil, false
}

// movedAsideOrLockErr files a key dir moved aside while its lock was
// waited for as failed, and any other error as lockErr does. Not skipped,
// as ToEtcd skips a source dir moved aside: the key is still in etcd, the
// source, and not in the root, and a skip would let the run pass as
// complete (exit 0); a re-run writes it into a key dir of its own.
func movedAsideOrLockErr(r *MigrateReport, err error) {
	if errors.Is(err, errMovedAside) {
		fail(r, fmt.Errorf("%w (check --quarantine, a reap): nothing written; a re-run writes the key into a key dir of its own", err))
		return
	}
	lockErr(r, err)
}

// intoKeyDir judges the key dir kd against the etcd state st and, unless
// this is a dry run, writes st into it, under meta.db's exclusive lock.
// A run that fails before its commit takes away, under that lock, the
// meta.db its open made for the lock (holding nothing), and the key dir
// when its mkdir made it (madeDir) and nothing else is in it: the root is
// left as it was, as the report's empty written says (see unmake). end
// says whether ctx's end cut it short (see walk): stopUnprinted before
// anything was done (a dry run's read of a promotion's temp, the run's
// roll-forward of one, or its copy of the generation into a temp with
// nothing rolled forward or swept before it), stopPrinted after.
func (m *migration) intoKeyDir(ctx context.Context, kd *os.File, madeDir bool, st etcdmeta.State, src *genFile, r *MigrateReport) (end keyEnd) {
	key := r.Key
	_, err := fsat.LstatAt(kd, db.FileName)
	noDB := fsat.IsNotExist(err)
	legacyLayout := false
	if noDB {
		legacyLayout, err = legacyFiles(kd)
	}
	switch {
	case err != nil:
		fail(r, err)
		return
	case legacyLayout:
		// Checked before the open below, which would make meta.db.
		r.Action, r.Cause = Conflict, "the key dir is in the legacy layout: left alone"
		return
	case noDB && m.opts.DryRun:
		// The run makes meta.db here: refused, it fails the key.
		if err := migrate.MayWrite(kd); err != nil {
			fail(r, err)
			return
		}
		r.Action, r.Written = migrate.Migrated, writtenFor(st.Record)
		// What the run removes once it has made meta.db here and holds
		// its lock (below): a killed run's temps, a meta.db's among them.
		r.Removed = append(sweepStoreTemps(kd, false), migrate.SweepMetaTemps(sharedfs.FS(), kd, false)...)
		return
	}
	write := !m.opts.DryRun
	var before lockonly.Before
	if write && noDB {
		before = lockonly.Look(kd)
	}
	lock, sc, err := m.openLocked(kd, key, write)
	made := err == nil && write && noDB && before.MadeByOpen(kd, lock, sc)
	before.Close()
	if err != nil {
		movedAsideOrLockErr(r, err)
		return
	}
	committed := false
	defer func() {
		if lock != nil {
			if made && !committed && r.Action != migrate.Migrated && r.Action != migrate.Already {
				m.unmake(kd, lock, key, madeDir)
			}
			lock.Close()
		}
	}()
	if !write {
		// The run opens meta.db for writing (its exclusive lock) before
		// it judges the key: one this user may not write fails the key
		// there, whatever the key's state, and so here.
		if err := migrate.MayOpenMetaDB(kd); err != nil {
			fail(r, err)
			return
		}
	}
	transcript := store.TranscriptName
	inFlight, rolledForward := false, false
	if p := sc.Pending; store.PendingInFlight(kd, p) {
		inFlight = true
		if err := migrate.PendingTempNotRegular(kd, p); err != nil {
			fail(r, err) // no roll-forward settles it, a dry run's neither
			return
		}
		if !write {
			if transcript, err = dryRunTranscript(ctx, kd, p, r); err != nil {
				if stopped(ctx, err) != nil {
					return stopUnprinted
				}
				fail(r, err)
				return
			}
		} else {
			// RollForward takes the key's lock itself; the in-process lock
			// would make it wait for this one until its timeout.
			lock.Close()
			lock = nil
			if _, err := m.st.RollForwardContext(ctx, key); err != nil {
				// Stopped as it read the temp: nothing renamed or swept.
				if stopped(ctx, err) != nil {
					return stopUnprinted
				}
				lockErr(r, err)
				return
			}
			rolledForward = true
			rolled := len(r.Oddities)
			odd(r, db.FileName, fmt.Sprintf("a pending promotion (gen %d)", p.Gen), "rolled forward first")
			if lock, sc, err = m.openLocked(kd, key, true); err != nil {
				movedAsideOrLockErr(r, err)
				return
			}
			tempRemoved(r, rolled, kd, p, sc)
			if store.PendingInFlight(kd, sc.Pending) {
				fail(r, fmt.Errorf("%s: %w", fsat.Join(kd, db.FileName), errNotSettled))
				return
			}
		}
	}
	if write {
		// Under the exclusive lock, once any promotion in flight is
		// settled, every promotion temp is debris (the store's own rule):
		// here, one a killed run wrote and never committed.
		r.Removed = sweepStoreTemps(kd, true)
		// And the meta.db temps a killed run's creation of meta.db left
		// (a minute old, no flock held), as migrate's other directions
		// sweep them: else a converged run left them for check to report.
		r.Removed = append(r.Removed, migrate.SweepMetaTemps(sharedfs.FS(), kd, true)...)
		if err := faults.At(faults.FromEtcdLocked); err != nil {
			fail(r, err)
			return
		}
	} else if fsat.AccessAt(kd, ".", unix.W_OK|unix.X_OK) == nil {
		// A dry run lists them, where the run may remove them: in a key
		// dir it may not write in (the mode, an ACL, a read-only mount),
		// which takes a key written in meta.db alone, the run's sweeps
		// remove nothing and list nothing. With a promotion in flight
		// (its temp whole or not), the run's roll-forward sweeps the
		// store's, as it does unlisted.
		if !inFlight {
			r.Removed = sweepStoreTemps(kd, false)
		}
		r.Removed = append(r.Removed, migrate.SweepMetaTemps(sharedfs.FS(), kd, false)...)
	}
	var hist []db.HistoryEntry
	if err := lock.View(func(tx *db.Tx) (err error) { hist, err = tx.History(0); return err }); err != nil {
		lockErr(r, err)
		return
	}

	present, size, sum, err := fileID(ctx, kd, transcript)
	if cerr := stopped(ctx, err); cerr != nil {
		// Stopped as it read the transcript in place: nothing written.
		return m.cutInKeyDir(r, cerr, rolledForward)
	}
	if err != nil {
		fail(r, err)
		return
	}
	// The key dir is judged by the generation it serves, as ToEtcd moved
	// it: a key that went to etcd and comes back to its own root is
	// already there.
	local, _ := served(sc, present, size, sum)
	rec := st.Record
	var prev *db.Transcript
	from := 0
	switch {
	case sc.Transcript == nil && sc.PiVersion == nil && sc.Venue == nil && sc.ResumeChain == nil && sc.Context == nil:
		switch legacyLayout, err := legacyFiles(kd); {
		case err != nil:
			fail(r, err)
			return
		case legacyLayout:
			r.Action, r.Cause = Conflict, "the key dir is in the legacy layout (meta.db holds no record): left alone"
			return
		}
	case sameGen(local, rec.Transcript):
		if present != (src != nil) || src != nil && (size != src.size || sum != src.sum) {
			r.Action, r.Cause = Conflict, fmt.Sprintf("meta.db records %s, but current.jsonl is not that generation: left alone", describe(local))
			return
		}
		dirRec := recordOf(sc, "")
		dirRec.Transcript = local
		if d := stampConflict(rec, dirRec, hostHistory(hist), st.History, lostPromotion(sc, present, size, sum)); d != "" {
			// The same bytes under other stamps, by another promotion:
			// another root's key (see stampConflict).
			r.Action, r.Cause = Conflict, fmt.Sprintf("the key dir holds %s, the same bytes as etcd, but with other stamps (%s) and another history: left alone", describe(local), d)
			return
		}
		r.Action = migrate.Already
		// The fleet records a refusal without a new generation: entries
		// the key dir lacks are carried, in one transaction.
		if n := len(st.History) - newerEntries(st.History, hostHistory(hist)); n > 0 {
			r.Action, r.Cause, r.Written = migrate.Migrated, fmt.Sprintf("the same generation; %s the fleet recorded since carried", countEntries(n, "history ")), []string{db.FileName}
			if write {
				if err := lock.Update(func(tx *db.Tx) error {
					for _, e := range historyOf(st.History[len(st.History)-n:]) {
						if _, err := tx.AppendHistory(e); err != nil {
							return err
						}
					}
					return nil
				}); err != nil {
					r.Written = nil // nothing carried
					fail(r, err)
				}
			}
		}
		return
	case local == nil && present:
		// A transcript no record names is not a generation anyone
		// promoted, but it is bytes: not written over.
		r.Action, r.Cause = Conflict, "current.jsonl is named by no record in meta.db: left alone"
		return
	default:
		n, ok, err := descends(ctx, m.b.dir, rec.Transcript, st.History, local, hostHistory(hist))
		if cerr := stopped(ctx, err); cerr != nil {
			// Stopped as it read the fleet's file for the key dir's
			// bytes: no telling whether it descends, nothing written.
			return m.cutInKeyDir(r, cerr, rolledForward)
		}
		if !ok {
			if err := shared.DirErr(m.b.dir); err != nil {
				// descends could not read the fleet's file: no telling.
				fail(r, fmt.Errorf("%w: left alone", err))
				return
			}
			r.Action, r.Cause = Conflict, fmt.Sprintf("the key dir holds %s, etcd %s, which does not descend from it: left alone", describe(local), describe(rec.Transcript))
			return
		}
		if lost := dropped(sc, rec); lost != "" {
			r.Action, r.Cause = Conflict, fmt.Sprintf("etcd's record has no %s stamp, which meta.db cannot drop: left alone", lost)
			return
		}
		from = n
		if local != nil {
			prev = &db.Transcript{Gen: local.Gen, Size: local.Size, CRC32C: local.CRC32C, PromotedAt: local.PromotedAt}
		}
		r.Cause = fmt.Sprintf("brought forward from %s: the fleet promoted it since", describe(local))
	}
	if src != nil {
		// The write renames its temp over current.jsonl after its commit:
		// a directory there would leave that commit a promotion in
		// flight no roll-forward settles, and the key failed. Failed
		// here, in a dry run too, before anything is written.
		if err := transcriptInTheWay(kd); err != nil {
			fail(r, err)
			return
		}
	}
	if !write {
		// What the run's writes there would be refused (the key dir's
		// mode, an ACL, a read-only mount) fails the key in the plan too.
		// With a generation to copy, the first is its temp's create
		// (writeTemp), said as that open says it, the temp's random part
		// as a plan names it. Without one, the run writes meta.db alone,
		// in place (writeKey: one transaction, no entry made, renamed or
		// removed in the key dir), and its open for writing was asked
		// above (MayOpenMetaDB, which weighs a meta.db with another name,
		// a hard link, that the run's open first copies into a file of
		// its own in the key dir): a key dir it may not make entries in
		// takes it, as the run's does. Before, the plan asked the key dir
		// of every key, and failed one with no transcript that its run
		// migrated.
		if src != nil {
			if err := fsat.AccessAt(kd, ".", unix.W_OK|unix.X_OK); err != nil {
				fail(r, fmt.Errorf("%w: a run may not write in the key dir and would fail the key there", saidAs("open", fsat.Join(kd, storeTempPrefix+"<random>"), err)))
				return
			}
		}
	}
	r.Action, r.Written = migrate.Migrated, writtenFor(rec)
	if !write {
		return
	}
	if src != nil {
		if err := m.b.at(hookMigrateCopy, key); err != nil {
			fail(r, err)
			return
		}
	}
	done, sent, err := m.writeKey(ctx, kd, lock, rec, st.History[from:], src, prev)
	// A commit tried and failed may have landed all the same: only a
	// failure before it leaves meta.db known to hold nothing.
	committed = sent
	if cerr := stopped(ctx, err); cerr != nil && !sent {
		// Stopped as it copied the generation into its temp: the temp
		// is removed.
		return m.cutInKeyDir(r, cerr, rolledForward)
	}
	if err != nil {
		// A failed key names what is in place, not the plan.
		r.Written = done
		fail(r, err)
	}
	return ran
}

// cutInKeyDir files a key of intoKeyDir that ctx's end (cerr) stopped
// before its commit was tried, nothing written (a dry run's read, or the
// run's read of the transcript in place or its copy into a temp): the
// meta.db (and key dir) the run made for its lock are taken away (the
// deferred unmake, as the failed key's). A key in which nothing else was
// done is left as never started; one whose promotion in flight was
// rolled forward, or whose debris was swept, says so.
func (m *migration) cutInKeyDir(r *MigrateReport, cerr error, rolledForward bool) keyEnd {
	fail(r, fmt.Errorf("%w: nothing written", cerr))
	r.Written = nil
	if m.opts.DryRun || !rolledForward && len(r.Removed) == 0 {
		return stopUnprinted
	}
	if rolledForward {
		r.Cause += ", rolled forward only"
	}
	return stopPrinted
}

// unmake takes away, under lock (meta.db's, which its open made for the
// lock and which holds nothing), that meta.db, and then the key dir, when
// this run's mkdir made it (madeDir) and it is empty: a failure before the
// commit leaves the root as it was. A writer waiting for the lock finds
// its file replaced and opens again (db's errReplaced), making its own; a
// key dir holding anything else (such a writer's meta.db) is left. What
// cannot be removed stays, as the store reads it: a key dir with an empty
// meta.db is absent.
func (m *migration) unmake(kd *os.File, lock *db.DB, key string, madeDir bool) {
	disk := sharedfs.FS()
	if disk.Remove(kd, db.FileName) != nil {
		return
	}
	disk.SyncDir(kd)
	// Closed before the rmdir: NFS and FUSE keep an open unlinked file
	// under a hidden name in the dir.
	lock.CloseFile()
	if madeDir && unix.Unlinkat(int(m.rootDir.Fd()), key, unix.AT_REMOVEDIR) == nil {
		disk.SyncDir(m.rootDir)
	}
}

// saidAs is err, a look's refusal (fsat.AccessAt's "access <dir>"), said
// as the call op at path it stands for would say it, the same cause (a
// dry run's words for a write its run would meet refused); an error that
// is no look's refusal is err as it is.
func saidAs(op, path string, err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) && pe.Op == "access" {
		return &os.PathError{Op: op, Path: path, Err: pe.Err}
	}
	return err
}

// transcriptInTheWay is errDirAtTranscript, naming current.jsonl in kd,
// when a directory (empty or not) is at that name, and nil otherwise
// (what is not a directory, a rename replaces; a look that fails, the
// write meets itself).
func transcriptInTheWay(kd *os.File) error {
	if st, err := fsat.LstatAt(kd, store.TranscriptName); err != nil || !fsat.IsDir(&st) {
		return nil
	}
	return &os.PathError{Op: "write", Path: fsat.Join(kd, store.TranscriptName), Err: errDirAtTranscript}
}
