package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"unicode/utf8"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/faults"
	"sessdb/internal/fsat"
	"sessdb/store/legacy"
)

// keyDirs is the default Backend: a directory per key under the sessions
// root of one host (see the package doc), each key's record in a meta.db
// whose flock is the key's lock, or, for a key not yet migrated, in the
// legacy sidecar files.
type keyDirs struct{ s *Store }

// Dir is the sessions root, as the store was given it.
func (b keyDirs) Dir() string { return b.s.root }

// ID is where the sessions root leads: absolute, its links resolved
// (fsat.ResolvedPath), as the kernel takes the path the store opens. A
// ticket is read back by a promote that may run from another working
// directory, or name the root another way, and ReadTicket refuses a root
// that is not absolute. Cleaned alone (filepath.Abs, as before
// 2026-12-06), a root spelled "link/../sessions" named the link's own
// directory's "sessions", another directory than the store's: a ticket
// of this store then promoted into that one.
func (b keyDirs) ID() (string, error) {
	id, err := fsat.ResolvedPath(b.s.root)
	switch {
	case err != nil:
		return "", fmt.Errorf("where the sessions root %q leads cannot be told: %w", b.s.root, err)
	case !utf8.ValidString(id):
		return "", fmt.Errorf("%w: %q", ErrRootNotUTF8, id)
	}
	return id, nil
}

// SameID compares by the directory itself when the spellings differ: a
// worker that resolves through a link or a bind mount and promotes
// through the real path is the same root, and must not be ErrWrongRoot;
// so is a ticket of an older sessdb, which names the root cleaned, not
// resolved. The store's side is the directory it opens, its root as
// given. A root that cannot be stat'd (not made yet) is the same only
// when it leads to the same path.
func (b keyDirs) SameID(id string) (bool, error) {
	mine, err := b.ID()
	if err != nil || mine == id {
		return err == nil, err
	}
	a, aerr := os.Stat(b.s.root)
	o, oerr := os.Stat(id)
	return aerr == nil && oerr == nil && os.SameFile(a, o), nil
}

// View opens the key dir, its meta.db under the shared lock and its
// transcript (see openKey).
func (b keyDirs) View(key string, bounds gates.Bounds) (KeyView, error) {
	return b.ViewContext(context.Background(), key, bounds)
}

// ViewContext is View, its wait for the key's lock ended once ctx is done
// (db.OpenReaderContext), with ctx's error, not the locked cold start.
func (b keyDirs) ViewContext(ctx context.Context, key string, _ gates.Bounds) (KeyView, error) {
	k, err := b.s.openKeyContext(ctx, key, faults.ResolveAfterKeyDirOpen)
	if err != nil {
		return nil, err
	}
	// A key with no dir, or whose lock was not had, read no record: there
	// is no pending promotion to serve.
	if k.dir != nil && !k.locked {
		if err := k.servePending(ctx, true); err != nil {
			k.close()
			return nil, err
		}
	}
	v := &keyView{k: k}
	if err := v.judgeBase(ctx); err != nil {
		k.close()
		return nil, err
	}
	return v, nil
}

// keyView is a key dir opened for a resolve.
type keyView struct {
	k    *keyDir
	base Base // judgeBase's
}

// Observe names the cold starts openKey found before the ladder could
// run, in the order the ladder would meet them: no key dir (rung 1), a
// key dir that is a link (rung 2), then the lock, which leaves nothing to
// judge.
func (v *keyView) Observe() (gates.Observation, gates.Reason) {
	switch k := v.k; {
	case k.missing:
		return k.obs, gates.Absent
	case k.notDir:
		return k.obs, gates.NotARegularFile
	case k.locked:
		return k.obs, gates.Locked
	case k.tempLost && k.transcript == nil:
		// A committed promotion's temp damaged, and nothing regular in
		// place to be the generation before it: the promotion is lost,
		// whatever the ladder would say of the empty name.
		return k.obs, gates.PromotionLost
	}
	return v.k.obs, ""
}

// StampNotRead is the read's error of the legacy stamp file name (venue,
// pi-version) that Observe gave as gates.Stamp.NotRead; nil for any other.
func (v *keyView) StampNotRead(name string) error {
	switch name {
	case legacy.VenueName:
		return v.k.legacy.VenueNotRead
	case legacy.PiVersionName:
		return v.k.legacy.PiVersionNotRead
	}
	return nil
}

// Base is the key's base as openKey read it under the shared lock: what
// a writer's Begin will take the key to hold (see heldRecord).
func (v *keyView) Base() Base { return v.base }

// judgeBase finds the key's base, for Base. A committed promotion's temp
// that is gone, or damaged (the next writer sweeps it instead of renaming
// it), leaves the key holding the generation before it, or nothing: the
// base is what that writer's Begin will take the key to hold. Only a
// crash leaves a key so. servePending read the temp whole before serving
// it, and a read of it that failed (an I/O error) failed the view: taken
// for a damaged temp, the ticket of a resolve whose copy then read it
// whole named the generation before it, and the job's promote, after its
// roll-forward put the temp in place, was superseded by the generation
// it had resumed.
func (v *keyView) judgeBase(ctx context.Context) error {
	k := v.k
	v.base = k.base()
	if k.pending != nil && !k.fromTemp {
		// What is in place: current.jsonl as it was opened (by openKey,
		// or again after a damaged temp).
		st := &k.tst
		if k.transcript == nil {
			st = nil // nothing, or not a regular file
		}
		held, err := heldRecord(ctx, k.dir, k.sidecars, st)
		if err != nil {
			return err
		}
		if held != k.sidecars.Transcript {
			v.base = baseOf(held, st)
		}
	}
	return nil
}

// Source bounds the copy at one byte over the size expected: that byte
// tells a longer file from a match without reading the rest of it, which
// a sparse or runaway file could make any size.
func (v *keyView) Source() (*os.File, int64) { return v.k.transcript, v.k.expectSize + 1 }

// Accept checks a copy against the record, in the order a crash can leave
// a key in: the record's identity (from its pending temp, when the
// promotion that committed it was not renamed yet); the generation before
// it, in place, when that temp was lost; and, for a legacy key, which
// nothing locks, the legacy store's venue re-check and its file identity.
func (v *keyView) Accept(size int64, sum uint32) Acceptance {
	return v.accept(copied{size: size, sum: sum, summed: true})
}

// accept is Accept for a copy known as c. dump and check follow a
// resolve's copy through it too (see keyView.follow), so that what they
// report is this decision, fallbacks included, and not a copy of it.
func (v *keyView) accept(c copied) Acceptance {
	k := v.k
	// The legacy store's venue re-check comes before the identity check,
	// as its order was the contract.
	if k.layout == LayoutLegacy {
		venue, err := legacy.ObserveVenue(k.dir)
		switch {
		case err != nil:
			return Acceptance{Err: err}
		case !sameVenue(venue, k.obs.Venue):
			// A migration that landed under the copy removes the legacy
			// stamps once meta.db holds them, and leaves the transcript
			// as it was: the cold start then has no base, or the job's
			// cold run would replace the conversation the key still
			// holds. (A meta.db there at the gate, holding no record, was
			// locked by this read: nothing can commit in it meanwhile.)
			migrated := false
			if k.meta == nil {
				_, err := fsat.LstatAt(k.dir, db.FileName)
				if err != nil && !fsat.IsNotExist(err) {
					return Acceptance{Err: err}
				}
				migrated = err == nil
			}
			return Acceptance{Reason: gates.VenueChanged, Unbased: migrated}
		}
	}
	matches, err := k.matches(c)
	if err != nil {
		return Acceptance{Err: err}
	}
	switch {
	case matches:
		b := k.base()
		if k.layout == LayoutLegacy && c.summed {
			// A legacy key's identity is its file; what was delivered is
			// known now, so the base can say it exactly.
			b.Size, b.CRC32C = c.size, Checksum(c.sum)
		}
		return Acceptance{Resume: true, Base: b}
	case !k.fromTemp && k.matchesPrev(c):
		// A committed promotion's temp is gone (or was damaged), and what
		// is in place is the generation before it: that is what the key
		// holds.
		return Acceptance{Resume: true, Base: baseOf(k.pending.Prev, nil)}
	case k.fromTemp:
		// The committed promotion's temp is damaged (as dump and check
		// find it here; a resolve, which read it whole first, only where
		// a process that ignores the lock changed it since): the
		// transcript in place may still be the generation before it.
		k.tempLost = true
		if err := k.reopenInPlace(); err != nil {
			// Not read (no descriptor left, an I/O error): that says
			// nothing of what is in place.
			return Acceptance{Err: err}
		}
		if k.transcript == nil {
			return Acceptance{Reason: gates.PromotionLost}
		}
		return Acceptance{Retry: true}
	case k.tempLost:
		return Acceptance{Reason: gates.PromotionLost}
	}
	return Acceptance{Reason: gates.TranscriptReplaced}
}

// sameVenue reports whether the venue stamp read again after a legacy
// key's copy names the venue the gate passed (at): the legacy re-check
// compared the venue it read again with the job's, an absent stamp read as
// gates.UnstampedVenue (legacy-store.md §2.2 step 6), and the gate passed
// only at's venue. So a "local" stamp gone since (a migration removes the
// legacy files once meta.db holds them, the venue last), or one written
// where there was none, is the same venue; an unreadable stamp is none.
func sameVenue(again, at gates.Stamp) bool {
	named := func(s gates.Stamp) (string, bool) {
		switch s.State {
		case gates.StampPresent:
			return s.Value, true
		case gates.StampAbsent:
			return gates.UnstampedVenue, true
		}
		return "", false
	}
	a, ok := named(again)
	b, okAt := named(at)
	return ok && okAt && a == b
}

// Lost: a key dir is on the host's own disk, where a read error is a
// fault, not a verdict.
func (v *keyView) Lost(error) gates.Reason { return "" }

// Close releases the shared lock (a legacy key has none) by closing
// meta.db, whose flock it is.
func (v *keyView) Close() error {
	v.k.close()
	return nil
}

// Begin makes the key dir if need be, takes the key's exclusive lock
// (creating meta.db), finishes what a crash left behind (a committed
// promotion rolled forward, stray temps swept), and reads the key's record
// and history.
func (b keyDirs) Begin(key string, base Base) (KeyTxn, error) {
	return b.BeginContext(context.Background(), key, base)
}

// BeginContext is Begin, its wait for the key's exclusive lock ended once
// ctx is done (db.OpenSidecarsContext), with ctx's error, not
// ErrKeyLocked. The key dir and its meta.db may have been made by then, as
// by a Begin that found the key locked.
func (b keyDirs) BeginContext(ctx context.Context, key string, _ Base) (KeyTxn, error) {
	s := b.s
	kd, err := s.openKeyDirForWrite(key)
	if errors.Is(err, fsat.ErrNotDir) {
		return nil, ErrKeyDirNotADirectory
	}
	if err != nil {
		return nil, err
	}
	t := &keyTxn{s: s, kd: kd}
	ok := false
	defer func() {
		if !ok {
			t.Close()
		}
	}()
	t.d, t.sc, err = db.OpenSidecarsContext(ctx, kd, s.writerOptions("promote", kd, key), true)
	if errors.Is(err, db.ErrLockTimeout) {
		return nil, ErrKeyLocked
	}
	if err != nil {
		return nil, err
	}
	if err := t.d.View(func(tx *db.Tx) (err error) { t.history, err = tx.History(0); return err }); err != nil {
		return nil, err
	}
	// The key dir may have been moved aside while this writer waited for
	// its lock (check --repair --quarantine): a promotion landing there
	// would say promoted of a dir no resolve finds. Whoever moves a key
	// dir holds its lock, so the name checked now stays until this writer
	// lets go. A dir a killed reap renamed (its last entry says reaping,
	// and it is at a reap-owned name) is the exception: the next reap
	// moves a promotion landed there back to its key. A reap killed
	// before its rename leaves the same entry in a dir a quarantine may
	// then move, and nothing moves a quarantine dir back.
	if err := stillAtKey("promote", s.root, kd, key); err != nil {
		if n := len(t.history); n == 0 || t.history[n-1].Outcome != reapingOutcome || !atReapedName(s.root, kd, key) {
			return nil, err
		}
	}
	t.emptyDB = t.sc == (db.Sidecars{}) && len(t.history) == 0
	// The pending entry itself is replaced by this promotion's commit. A
	// cancel ends the read of its temp (a promotion of gigabytes), with
	// nothing renamed or swept.
	if _, err := s.rollForward(ctx, kd, t.d, t.sc.Pending, false); err != nil {
		return nil, err
	}
	// Made durable by Stage's directory fsync, if the promotion gets
	// that far; if not, a temp a power cut brings back is debris again.
	t.s.sweepTemps(kd)
	if t.cur, err = currentBase(ctx, kd, t.sc); err != nil {
		return nil, err
	}
	if fell, err := fellBack(ctx, kd, t.d.MetaPages(), t.cur); err != nil {
		return nil, err
	} else if fell {
		return nil, &os.PathError{Op: "promote", Path: t.d.Path(), Err: ErrMetaFellBack}
	}
	if t.sc.Transcript == nil {
		// A key with no record yet but legacy files (its first promotion
		// since a partial migration) continues from the legacy chain,
		// read, not taken as 0 for want of a descriptor.
		chain, err := legacy.ObserveResumeChain(kd)
		if err != nil {
			return nil, err
		}
		t.sc.ResumeChain = &chain
	}
	ok = true
	return t, nil
}

// writerOptions are dbOptions for a writer's open of kd, the dir of key,
// that refuse to make or change anything in it once it is no longer at
// key's name (stillAtKey): the open may wait for a lock while a
// quarantine or a reap moves the dir aside, and the meta.db such a
// quarantine of a key without one made for its lock and unlinked again
// was made again by the open, in the dir moved aside.
func (s *Store) writerOptions(op string, kd *os.File, key string) db.Options {
	o := s.dbOptions()
	o.BeforeWrite = func() error { return stillAtKey(op, s.root, kd, key) }
	return o
}

// stillAtKey fails, naming op, unless kd is still the directory at key
// under the sessions root.
func stillAtKey(op, root string, kd *os.File, key string) error {
	held, err := fsat.Fstat(kd)
	if err != nil {
		return err
	}
	rd, err := fsat.OpenDir(root)
	if err != nil {
		return err
	}
	defer rd.Close()
	now, err := fsat.LstatAt(rd, key)
	if err == nil && (now.Dev != held.Dev || now.Ino != held.Ino) {
		err = errors.New("another directory is at its name")
	}
	if err != nil {
		return &os.PathError{Op: op, Path: kd.Name(), Err: &movedAsideError{op, err}}
	}
	return nil
}

// movedAsideError is stillAtKey's: a caller whose refusal has a name
// (Accept's ErrNotAccepted) tells it from a fault, also when it comes out
// of a db open, whose BeforeWrite asks stillAtKey.
type movedAsideError struct {
	op  string
	err error // why: the name gone, or another dir at it
}

func (e *movedAsideError) Error() string {
	return fmt.Sprintf("the key dir was moved aside while this %s waited for its lock: %v", e.op, e.err)
}

func (e *movedAsideError) Unwrap() error { return e.err }

// atReapedName reports whether kd, a dir of key no longer at key's name,
// is at a reap-owned name of key (ReapedPrefix). Only a holder of the
// lock of the dir's meta.db moves a reap-owned dir (a reap finishing it),
// so for the caller, which holds it, the answer stays true.
func atReapedName(root string, kd *os.File, key string) bool {
	held, err := fsat.Fstat(kd)
	if err != nil {
		return false
	}
	rd, err := fsat.OpenDir(root)
	if err != nil {
		return false
	}
	defer rd.Close()
	found, reaped, err := asideAt(rd, &held, key)
	return err == nil && found && reaped
}

// removeLockOnly unlinks kd's meta.db, one an open made for its lock alone
// and that holds nothing, under that lock, and makes the unlink durable,
// as a migration does: the key is then as it was, after a power cut too.
// Without the fsync a cut brought the empty file back, as a kill between
// the create and the unlink leaves it (it vouches for nothing: no verdict
// changes), in a dir the operation had reported left as it was (a
// quarantine's too). Only the paths that made such a file pay for it: a
// refused first promotion, reap, check --repair, quarantine and accept;
// never a resolve or a promotion that lands. A failure leaves the file,
// empty.
func (s *Store) removeLockOnly(kd *os.File) {
	if s.disk.remove(kd, db.FileName) == nil {
		s.disk.syncDir(kd)
	}
}

// keyTxn is a key dir held under its exclusive lock for a promotion.
type keyTxn struct {
	s       *Store
	kd      *os.File
	d       *db.DB
	sc      db.Sidecars
	history []db.HistoryEntry
	cur     keyState
	temp    string // a staged temp not yet committed, removed by Close
	// emptyDB: meta.db held no record, stamp or history when Begin took
	// its lock (Begin may have created it for the lock alone), and no
	// commit was tried since. Close then removes it, so that a promotion
	// that writes nothing (a refusal, a failure before the commit) leaves
	// the key dir as it found it: a legacy key's layout, and dump's view
	// of its stamps, unchanged.
	emptyDB bool
}

// State returns what Begin read and settled under the exclusive lock: no
// other writer can change the key while the lock is held.
func (t *keyTxn) State() (db.Sidecars, []db.HistoryEntry, Base) { return t.sc, t.history, t.cur.base }

// HoldsRecord reads current.jsonl against the record's size and CRC32C.
func (t *keyTxn) HoldsRecord() (bool, error) {
	return t.HoldsRecordContext(context.Background())
}

// HoldsRecordContext is HoldsRecord, its read stopped once ctx is done
// (looked at before each megabyte), with ctx's error
// (store.ContextKeyTxn).
func (t *keyTxn) HoldsRecordContext(ctx context.Context) (bool, error) {
	rec := t.sc.Transcript
	if rec == nil {
		return false, nil
	}
	if err := faults.At(faults.HoldsRecordRead); err != nil {
		return false, err
	}
	holds, err := fileCheck(ctx, t.kd, TranscriptName, rec.Size, rec.CRC32C)
	if err == nil {
		// A read ctx stopped does not match, and says nothing.
		err = ctx.Err()
	}
	return holds && err == nil, err
}

// Refuse appends e to the history in a transaction of its own.
func (t *keyTxn) Refuse(e db.HistoryEntry) error {
	if t.sc.Transcript == nil {
		// A meta.db with no record reads as a promotion or migration that
		// never committed (openKey, and migrate --to-legacy, which removes
		// it): a refusal written there would be lost without a word. The
		// log (session_promote_skipped) still has it.
		return nil
	}
	return t.d.Update(func(tx *db.Tx) error {
		_, err := tx.AppendHistory(e)
		return err
	})
}

// Stage writes the temp and makes it durable before the commit that names
// it: its data by the file's fsync, its name by the directory's. Without
// the second, a power cut after the commit can lose the name, and the
// record would then describe neither the temp (gone) nor the transcript
// still in place: the last acknowledged promotion would never resume again
// (TestPowerCutAtEveryStep).
func (t *keyTxn) Stage(_ uint64, src io.ReaderAt, size int64, torn bool) (Staged, error) {
	name, n, sum, err := t.s.writeTemp(t.kd, src, size, torn)
	if err != nil {
		return Staged{}, err
	}
	t.temp = name
	if err := t.s.disk.syncDir(t.kd); err != nil {
		return Staged{}, err
	}
	return Staged{Name: name, Size: n, CRC32C: sum}, nil
}

// Commit is one transaction for the identity, the pending entry, every
// sidecar and the history (bbolt fsyncs it), then the rename that makes
// the temp the transcript and the directory fsync that makes the rename
// durable. A crash between the two leaves the pending entry, which the
// next writer rolls forward and any reader serves from the temp. The
// pending entry stays once the rename landed: its temp is gone, which
// settles it (see pendingInFlight), and the next writer's commit replaces
// it; clearing it now would be a second commit, two more flushes.
func (t *keyTxn) Commit(st Staged, rec db.Sidecars, e db.HistoryEntry) error {
	t.emptyDB = false // a failed commit may have landed
	err := t.d.Update(func(tx *db.Tx) error {
		id := rec.Transcript
		rec.Pending = &db.Pending{Tmp: st.Name, Size: id.Size, CRC32C: id.CRC32C, Gen: id.Gen, Prev: t.cur.record}
		if err := tx.PutSidecars(rec); err != nil {
			return err
		}
		_, err := tx.AppendHistory(e)
		return err
	})
	if err == nil {
		err = t.s.fault(faults.PromoteAfterCommit)
	}
	if err != nil {
		// Whether or not the commit landed, the next writer settles it:
		// rolled forward if it did, the temp swept if it did not.
		t.temp = ""
		return err
	}
	t.temp = ""
	if err := t.s.disk.rename(t.kd, st.Name, TranscriptName); err != nil {
		return err
	}
	if err := t.s.fault(faults.PromoteAfterRename); err != nil {
		return err
	}
	if err := t.s.disk.syncDir(t.kd); err != nil {
		return err
	}
	if err := t.s.fault(faults.PromoteAfterDirSync); err != nil {
		// Landed: an error here is logged, not returned.
		t.s.opts.Logger.Warn().Str("key", filepath.Base(t.kd.Name())).Err(err).Msg("session_fault_after_landing")
	}
	return nil
}

// Close removes a temp Stage wrote that no Commit was tried for (the
// staged file changed under the copy, a fault in between), and a meta.db
// that holds nothing (emptyDB), then releases the lock by closing
// meta.db. A Commit that failed may have landed, so its temp is left for
// the next writer to roll forward or sweep.
func (t *keyTxn) Close() error {
	if t.temp != "" {
		t.s.disk.remove(t.kd, t.temp)
	}
	if t.d != nil {
		if t.emptyDB {
			// Still under the lock, as reap and check --repair remove
			// meta.db: an open waiting for the lock finds the name gone
			// once it has it, and a writer makes its own.
			t.s.removeLockOnly(t.kd)
		}
		t.d.Close()
	}
	return t.kd.Close()
}
