package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/callerctx"
	"sessdb/internal/faults"
	"sessdb/internal/fsat"
	"sessdb/internal/lockonly"
	"sessdb/internal/walk"

	"golang.org/x/sys/unix"
)

// ReapResult says what a Reap did. Every name under the root is in
// exactly one of Removed, Kept (a key left in place), Finished, Restored
// and Skipped (a name left alone, with why: not a key, not a directory, an
// expired key refused, a fault). Swept lists the stray temp files removed
// from kept keys, as <key>/<name>. Failed lists, in order, the names of
// Skipped that are faults (an I/O error, a lock not had in time), and
// Refused the expired keys left whole because they hold something that is
// not the store's (ErrForeignEntry): reap could not do either. Finished
// lists the reap-owned dirs an interrupted reap left that were removed,
// and Restored those moved back to their key because a promotion landed
// in them. (sessdb reap --json prints actions built from it:
// docs/json.md.) Causes holds the error each name of Skipped was left
// for, Skipped its text, so that errors.Is and errors.As tell the causes
// apart: ErrForeignEntry (a key in Refused, or a reap-owned dir holding
// what is not the store's), ErrReapedKeyExists, ErrDirNotMovable,
// db.ErrLockTimeout, an *os.PathError (a key's name that is not a
// directory among them). A name that is not a key, and a dir check
// --quarantine moved aside, are left with an error no sentinel names:
// ValidKey and QuarantinedKey tell them by their names.
type ReapResult struct {
	Removed  []string          // expired keys removed (with DryRun: that would be)
	Swept    []string          // stray temps removed from kept keys, as <key>/<name>
	Kept     int               // keys left in place
	Skipped  map[string]string // names left alone, each with why
	Failed   []string          // of Skipped, the faults
	Refused  []string          // of Skipped, expired keys holding what is not the store's
	Finished []string          // reap-owned dirs of an interrupted reap, removed
	Restored []string          // reap-owned dirs a promotion landed in, moved back to their key
	// Causes has the names of Skipped, each with the error its text is.
	// (Skipped stays text, as it was before Causes, so code that reads
	// it is unchanged; package fleet's ReapResult.Skipped holds errors.)
	Causes map[string]error
}

// ReapOptions says how ReapWith runs. The zero value reaps for real, with
// a default number of workers.
type ReapOptions struct {
	// DryRun removes nothing; the result lists what would be removed,
	// but for what this process may not change (permission denied, a
	// read-only file system: fsat.AccessAt), which fails as in a run.
	DryRun bool
	// Workers is as in InspectOptions.
	Workers int
	// Progress is as in InspectOptions, counting names reaped.
	Progress func(done, total int)
}

// Reap is ReapWith with only DryRun set.
func (s *Store) Reap(dryRun bool) (ReapResult, error) {
	return s.ReapWith(context.Background(), ReapOptions{DryRun: dryRun})
}

// ReapWith removes every key whose last completed promotion is older than
// the TTL (Options.Bounds.TTL; 0 keeps every key), and from the keys it
// keeps, stray temp files older than StaleTempAge (but a meta.db temp
// whose flock is held: a creation in flight). The last promotion is
// the time recorded in meta.db, or the transcript's mtime where there is
// no record (a legacy key). A key with no transcript is never removed,
// but for an empty key dir (nothing in it at all) whose own mtime is older
// than the TTL, which goes by one rmdir (see reapEmptyKeyDir), and a key
// dir with no record that holds nothing a resolve or a promotion could
// use, idle past the TTL, which goes as an expired key does (deadKey).
//
// A key is removed whole or not at all. Under the key's exclusive lock,
// after the age is checked again under that lock (so a promotion that
// lands meanwhile is never deleted): every entry must be the store's (a
// regular file or a link at the transcript's, meta.db's or a legacy
// sidecar's name, a temp, a moved-aside meta.db), or the key is left
// whole and listed in Refused with what is in the way; then a reaping
// entry is committed to its history, the key dir is renamed to a
// reap-owned name (ReapedPrefix), so that the key is gone in one step,
// and its entries are removed relative to the dir's descriptor, meta.db
// last, then the dir. On a full disk or quota (ENOSPC, EDQUOT) the reap
// goes on without the entry, and where the rename is refused so too it
// removes the entries where they are. A promotion waiting for the lock
// finds meta.db's name gone and its dir removed, and reports
// promote-failed, never promoted. The temp that a pending record names is
// never swept: it is that promotion's only copy. With DryRun nothing is
// removed and the result lists what would be.
//
// A reap-owned dir found under the root is what a reap that was killed
// left; it is finished whatever the TTL: removed, or, if a promotion
// landed in it after the kill (a writer that was waiting for the lock),
// renamed back to its key when that name is free or an empty directory
// (ErrReapedKeyExists when it is anything else). A quarantine dir (check
// --quarantine) is left alone.
//
// The result lists names in order. When ctx ends the walk early the result
// covers the names reaped so far, and ctx's error is returned with it.
func (s *Store) ReapWith(ctx context.Context, opts ReapOptions) (ReapResult, error) {
	ctx = callerctx.Of(ctx) // nil is context.Background()
	res := ReapResult{Skipped: map[string]string{}, Causes: map[string]error{}}
	names, err := s.rootNames("")
	if err != nil {
		if fsat.IsNotExist(err) {
			return res, nil
		}
		return res, err
	}
	root, err := s.openRoot()
	if err != nil {
		return res, err
	}
	defer root.Close()
	type outcome struct {
		removed, finished, restored bool
		swept                       []string
		err                         error
	}
	work := func(i int) outcome {
		name := names[i]
		if _, ok := ReapedKey(name); ok {
			restored, err := s.finishReaped(root, name, opts.DryRun)
			return outcome{finished: err == nil && !restored, restored: restored, err: err}
		}
		if _, ok := QuarantinedKey(name); ok {
			return outcome{err: errQuarantined}
		}
		if !ValidKey(name) {
			return outcome{err: errNotAKey}
		}
		removed, swept, err := s.reapEntry(root, name, opts.DryRun)
		return outcome{removed: removed, swept: swept, err: err}
	}
	done := 0
	deliver := func(o outcome) error {
		name := names[done]
		done++
		for _, n := range o.swept {
			res.Swept = append(res.Swept, name+"/"+n)
		}
		switch {
		case o.err != nil:
			res.Skipped[name] = o.err.Error()
			res.Causes[name] = o.err
			switch {
			case o.err == errNotAKey, o.err == errQuarantined:
			case errors.Is(o.err, ErrForeignEntry) && ValidKey(name):
				res.Refused = append(res.Refused, name)
			case !errors.Is(o.err, fsat.ErrNotDir) && !fsat.IsNotExist(o.err) && !errors.As(o.err, new(*movedAsideError)):
				// Not a dir, gone, or moved aside while this waited for
				// its lock (another reap's, a quarantine's; a key made
				// again at the name since is the next reap's to judge):
				// skipped, no failure.
				res.Failed = append(res.Failed, name)
			}
			if o.err != errNotAKey && o.err != errQuarantined {
				s.opts.Logger.Warn().Str("key", name).Err(o.err).Msg("session_reaper_skipped")
			}
		case o.removed:
			res.Removed = append(res.Removed, name)
			if !opts.DryRun {
				s.opts.Logger.Info().Str("key", name).Msg("reaped_session")
			}
		case o.finished:
			res.Finished = append(res.Finished, name)
		case o.restored:
			res.Restored = append(res.Restored, name)
			if !opts.DryRun {
				s.opts.Logger.Info().Str("dir", name).Msg("reaped_session_restored")
			}
		default:
			res.Kept++
		}
		if opts.Progress != nil {
			opts.Progress(done, len(names))
		}
		return nil
	}
	_, err = walk.Ordered(ctx, len(names), walk.Workers(opts.Workers), work, deliver)
	return res, err
}

var (
	errNotAKey     = errors.New("not a key")
	errQuarantined = errors.New("a key dir check --quarantine moved aside; sessdb leaves it")
)

// reapEntry removes key if it has expired, else sweeps its stray temps.
func (s *Store) reapEntry(root *os.File, key string, dryRun bool) (removed bool, swept []string, err error) {
	if ttl := s.opts.Bounds.TTL; ttl > 0 {
		if removed, err = s.reapKey(root, key, ttl, dryRun); removed || err != nil {
			return removed, nil, err
		}
	}
	kd, err := fsat.OpenDirAt(root, key)
	if err != nil {
		return false, nil, err
	}
	defer kd.Close()
	swept, err = s.sweepStaleTemps(kd, key, s.opts.Now().Add(-StaleTempAge), dryRun)
	if err != nil {
		err = fmt.Errorf("sweep stray temps: %w", err)
	}
	return false, swept, err
}

// reapKey removes key if it has expired, as ReapWith describes: every step
// is here, in order, the cleanup of a key that stays beside it.
func (s *Store) reapKey(root *os.File, key string, ttl time.Duration, dryRun bool) (bool, error) {
	kd, err := fsat.OpenDirAt(root, key)
	if err != nil {
		return false, err
	}
	defer kd.Close()
	st, err := fsat.LstatAt(kd, TranscriptName)
	noTranscript := fsat.IsNotExist(err)
	if err != nil && !noTranscript {
		return false, err
	}
	now := s.opts.Now()
	_, err = fsat.LstatAt(kd, db.FileName)
	hadDB := err == nil
	// A key with no transcript is never removed, unless its record says
	// it had one (a key whose transcript went some other way), it is an
	// empty key dir, or it holds nothing (deadKey).
	if noTranscript && !hadDB {
		return s.reapEmptyKeyDir(root, kd, key, ttl, dryRun)
	}
	// A first look without the exclusive lock, so that the many fresh keys
	// of a walk are never write-locked: the record under the shared lock,
	// or for a legacy key its transcript's mtime, its only clock. The mtime
	// is no filter for a db key: a copy or a restore from backup makes it
	// recent while the record keeps the promotion time, and dump would call
	// expired what reap never removed.
	if hadDB {
		d, sc, err := db.OpenSidecars(kd, s.dbOptions(), false)
		dead, idle := false, time.Time{}
		switch {
		case fsat.IsNotExist(err) && stillAtKey("reap", s.root, kd, key) == nil:
			// Gone while the look waited for its lock, the dir still the
			// key's: the lock file a promotion made for a legacy key and
			// removed again (a refusal's, removeLockOnly), or a killed
			// one's that a repair removed. The key is as with no meta.db:
			// its transcript's mtime is its clock. (A dir no longer at
			// the key, moved aside by another reap, is gone: skipped.)
			// With no transcript either, it is kept: the next reap judges
			// what is left.
			err = nil
		case err != nil:
			return false, err
		default:
			if sc.Transcript == nil && noTranscript {
				dead, idle, err = deadKey(kd, d, sc)
			}
			d.Close()
			if err != nil {
				return false, err
			}
		}
		if sc.Transcript == nil && noTranscript {
			// No record and no transcript: a key that holds nothing goes
			// once idle past the TTL (deadKey); any other is kept, its
			// stray temps swept below. Before, the transcript's lstat
			// was its clock: skipped with that error at every reap, kept
			// by none, its temps never swept, and what a reap removing a
			// legacy key in place left when stopped after the transcript
			// stayed for ever.
			if !dead || !expired(idle, now, ttl) {
				return false, nil
			}
		} else {
			last, err := lastPromotion(kd, sc)
			if err != nil || !expired(last, now, ttl) {
				return false, err
			}
		}
	} else if noTranscript || !expired(fsat.ModTime(&st), now, ttl) {
		return false, nil
	}
	if foreign, err := foreignEntries(kd); err != nil || len(foreign) > 0 {
		if err != nil {
			return false, err
		}
		return false, refuseForeign("expired, but", foreign)
	}
	if dryRun {
		// The run renames the dir under root, writes in it, and opens
		// its meta.db (or makes one, a legacy key's lock) as a writer.
		err := allowed(kd, root, kd)
		if err == nil {
			err = removable(root, kd, key, false)
		}
		return err == nil, err
	}

	if err := s.fault(faults.ReapBeforeLock); err != nil {
		return false, err
	}
	// The lock: a legacy key gets a meta.db for it, removed again below if
	// the key stays.
	before := lockonly.Look(kd)
	defer before.Close()
	// The key dir's turnstile is held with the lock, until d is closed:
	// once meta.db is unlinked, it is what a look that finds the dir with
	// no meta.db waits at (waitForReap).
	o := s.writerOptions("reap", kd, key)
	o.HoldTurnstile = true
	d, sc, err := db.OpenSidecars(kd, o, true)
	if err != nil {
		return false, err
	}
	defer d.Close()
	// Empty under the lock: the one this reap made, or one a promotion
	// made and died before its commit. Whether the first look saw a
	// meta.db says nothing: a promotion may have made one, and committed,
	// since.
	empty := sc == (db.Sidecars{})
	if empty {
		var h []db.HistoryEntry
		if err := d.View(func(tx *db.Tx) (err error) { h, err = tx.History(1); return err }); err != nil {
			return false, err
		}
		empty = len(h) == 0
	}
	// dead: judged below, under the lock, as a key that holds nothing.
	dead := false
	keep := func(err error) (bool, error) {
		// A dead key's empty meta.db is left as the reap found it, but
		// for one this reap's open made: removed, its unlink set the
		// dir's mtime, the key's clock, and a dead key refused (an
		// immutable temp) waited a whole TTL more once that was
		// cleared, though it had been judged idle past the TTL.
		if empty && (!dead || before.MadeByOpen(kd, d, sc)) {
			s.removeLockOnly(kd)
		}
		return false, err
	}
	// Moved aside (check --repair --quarantine) since the first look: the
	// dir locked is no longer the key, and what is at its name now (a key
	// made again) is not locked. The dir moved aside is left as it was
	// moved: an empty meta.db that was there (a killed promotion's lock
	// file) stays, and only one this open made goes.
	if err := stillAtKey("reap", s.root, kd, key); err != nil {
		if empty && before.MadeByOpen(kd, d, sc) && s.disk.remove(kd, db.FileName) == nil {
			s.disk.syncDir(kd) // durable, as removeLockOnly's
		}
		return false, err
	}
	// Again under the lock, as the first look judged: a key with no
	// record and no transcript by deadKey.
	if _, err := fsat.LstatAt(kd, TranscriptName); sc.Transcript == nil && fsat.IsNotExist(err) {
		var idle time.Time
		dead, idle, err = deadKey(kd, d, sc)
		if err != nil || !dead || !expired(idle, s.opts.Now(), ttl) {
			return keep(err)
		}
	} else if last, err := lastPromotion(kd, sc); err != nil || !expired(last, s.opts.Now(), ttl) {
		return keep(err)
	}
	// Again under the lock: only now can nothing be added behind the look.
	if foreign, err := foreignEntries(kd); err != nil || len(foreign) > 0 {
		if err != nil {
			return keep(err)
		}
		return keep(refuseForeign("expired, but", foreign))
	}
	// What the rename and the removal after it need, asked before either:
	// to write under the root, and in the key dir. A key dir its runner
	// may not write in (its own, mode 0500) is renamed all the same (a
	// rename in one parent asks nothing of the dir moved), and its
	// entries then cannot be removed: the key was gone, and every reap
	// and check --repair after failed its reap-owned dir, saying the next
	// would finish it. Refused here, it stays whole, failed as the dry
	// run fails it, and check's mode finding gives its owner the bits.
	//
	// So too an entry its runner may not remove where it may write (an
	// immutable one, another user's in a sticky key dir: removable):
	// the dir renamed aside and its removal refused, the key was gone
	// and the reap-owned dir failed every reap after, while the dry run
	// said it would remove the key.
	if err := allowed(nil, root, kd); err != nil {
		return keep(err)
	}
	if err := removable(root, kd, key, false); err != nil {
		return keep(err)
	}
	if err := s.fault(faults.ReapBeforeRemove); err != nil {
		return false, err
	}
	var gen uint64
	if sc.Transcript != nil {
		gen = sc.Transcript.Gen
	}
	// One reaping entry for a generation: a reap that stopped before its
	// rename left one (killed, or refused it: ErrDirNotMovable refuses
	// every reap after), and one more at each reap would push the key's
	// promotions and refusals out of its last 64 entries.
	err = d.Update(func(tx *db.Tx) error {
		last, err := tx.History(1)
		if err != nil {
			return err
		}
		if len(last) == 1 && last[0].Outcome == reapingOutcome && last[0].Gen == gen {
			return nil
		}
		if err := s.fault(faults.ReapEntry); err != nil {
			return err
		}
		_, err = tx.AppendHistory(db.HistoryEntry{Gen: gen, At: db.RecordedAt(s.opts.Now()), Outcome: reapingOutcome, Reason: string(gates.Expired)})
		return err
	})
	// A full disk (or quota) is what a reap is run to relieve, and on a
	// copy-on-write file system (btrfs) no bbolt commit fits on one: the
	// reap goes on without its entry, under the lock it still holds, so
	// no promotion can land meanwhile. The entry only tells a reap killed
	// after its rename from a promotion that landed after the kill; with
	// none, the next reap takes what it finds for such a promotion and
	// moves it back to its key (expired still: reaped again, never lost).
	if err != nil && !fsat.IsNoSpace(err) {
		return false, err
	}
	if err := s.fault(faults.ReapBeforeRename); err != nil {
		return false, err
	}
	// Its hold on meta.db would outlast the unlink below (see removeAside).
	before.Close()
	aside, err := s.renameAside(root, key, func(int) string { return newReapedName(key) })
	if fsat.IsNoSpace(err) {
		// Out of room, a file system may refuse the rename too (a btrfs
		// whose metadata is full, a full xfs, a btrfs qgroup at its
		// limit), never an unlink: the key is removed where it is, as
		// the dir aside would be, under the lock held. A writer that
		// makes a meta.db in it between the last unlink and the rmdir
		// keeps the dir (the rmdir fails), and the key is its promotion.
		// Stopped in between, the reap leaves the key without its
		// transcript (absent, removed by the next reap) or an empty dir
		// (removed once idle past the TTL): cold, never half a key.
		if rerr := s.removeAside(root, kd, key, d); rerr != nil {
			return false, fmt.Errorf("reap %s: %w; removing it in place instead: %w", key, err, rerr)
		}
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("reap %s: %w", key, err)
	}
	// From here the key is gone: an error leaves only the reap-owned dir,
	// which the next reap finishes.
	err = s.fault(faults.ReapAfterRename)
	if err == nil {
		var ad *os.File
		if ad, err = movedDir(root, kd, aside); err == nil {
			err = s.removeAside(root, ad, aside, d)
			ad.Close()
		}
	}
	if err != nil {
		return true, fmt.Errorf("reap %s: the key is gone (renamed to %s), but its removal stopped: %w; the next reap finishes it", key, aside, err)
	}
	return true, nil
}

// reapEmptyKeyDir removes a key dir with nothing in it once the dir has
// been left unchanged for the TTL, its only clock. A first promotion that
// was refused leaves one (its lock, the meta.db it made, goes on the
// refusal, and the dir cannot: a rival may be waiting for that lock in
// it), and so does a job promoted after its key was reaped. There is no
// lock to take: the removal is one rmdir, which the system refuses when
// anything was made in the dir meanwhile (the key stays). A promotion
// that opened the dir just before finds it gone when it makes its meta.db
// and is promote-failed; its retry makes the key dir again.
func (s *Store) reapEmptyKeyDir(root, kd *os.File, key string, ttl time.Duration, dryRun bool) (bool, error) {
	names, err := fsat.ReadDirNames(kd)
	if err != nil || len(names) > 0 {
		return false, err
	}
	st, err := fsat.Fstat(kd)
	if err != nil {
		return false, err
	}
	if !expired(fsat.ModTime(&st), s.opts.Now(), ttl) {
		return false, nil
	}
	if dryRun {
		// What the rmdir meets: the root's mode, and an immutable dir, an
		// append-only root or the sticky rule, which refuse it all the
		// same (the run's EPERM), in the rmdir's words.
		err := removalAs(root, key, "rmdir", fsat.DeleteErr(root, key))
		return err == nil, err
	}
	if err := s.fault(faults.ReapEmptyBeforeRmdir); err != nil {
		return false, err
	}
	// Another dir at the name is not the one judged empty and idle.
	if moved, err := fsat.Moved(root, key, kd); err != nil || moved {
		return false, err
	}
	// rmdir, not remove: that unlinks whatever is at the name, and this
	// must remove an empty directory or nothing.
	if err := s.disk.rmdir(root, key); err != nil {
		if errors.Is(err, unix.ENOTEMPTY) || errors.Is(err, unix.EEXIST) || fsat.IsNotExist(err) {
			return false, nil // made into a key, or removed, meanwhile
		}
		return false, refusedAs(root, key, err)
	}
	if err := s.disk.syncDir(root); err != nil {
		return false, err
	}
	return true, nil
}

// deadKey reports whether a key dir with no transcript and no record (sc,
// read from d, its meta.db) holds nothing a resolve or a promotion could
// use: no stamp, no pending promotion, no history but reaping entries;
// and when it was last changed, its only clock: the later of the dir's
// mtime and meta.db's, the latter while its history is empty. A first
// promotion killed before its commit leaves one (its empty meta.db, and
// its temp), and so does a reap removing a
// legacy key in place (a full disk) stopped after its transcript (the
// meta.db it made for the lock, with its reaping entry if that fit, and
// the legacy sidecars). Such a key resolves absent, and is removed whole,
// as an expired key is, once idle past the TTL.
func deadKey(kd *os.File, d *db.DB, sc db.Sidecars) (dead bool, changed time.Time, err error) {
	if sc != (db.Sidecars{}) {
		return false, time.Time{}, nil
	}
	var h []db.HistoryEntry
	if err := d.View(func(tx *db.Tx) (err error) { h, err = tx.History(0); return err }); err != nil {
		return false, time.Time{}, err
	}
	for _, e := range h {
		if e.Outcome != reapingOutcome {
			return false, time.Time{}, nil
		}
	}
	dst, err := fsat.Fstat(kd)
	if err != nil {
		return false, time.Time{}, err
	}
	mst, err := fsat.LstatAt(kd, db.FileName)
	if err != nil {
		return false, time.Time{}, err
	}
	changed = fsat.ModTime(&dst)
	// meta.db's mtime counts while its history is empty. Once it holds a
	// reaping entry, a reap judged the key dead and idle past the TTL,
	// and wrote that entry, which set the mtime: every write to meta.db
	// since is another such entry (a commit of anything else makes the
	// key no longer dead). Counted, it made a dead key whose reap was
	// cut or killed after its entry wait a whole TTL more, though the
	// dir had not changed. A promotion that comes since makes the dir
	// change (its temp), and that counts.
	if m := fsat.ModTime(&mst); len(h) == 0 && m.After(changed) {
		changed = m
	}
	return true, changed, nil
}

// lastPromotion is the recorded time of the key's last promotion, or the
// transcript's mtime where there is no record.
func lastPromotion(kd *os.File, sc db.Sidecars) (time.Time, error) {
	if sc.Transcript != nil {
		return time.Unix(0, sc.Transcript.PromotedAt), nil
	}
	st, err := fsat.LstatAt(kd, TranscriptName)
	if err != nil {
		return time.Time{}, err
	}
	return fsat.ModTime(&st), nil
}

// expired is the expired rung's own test (gates: strictly older than the
// TTL), so reap never removes a key a resolve would still resume.
func expired(last, now time.Time, ttl time.Duration) bool { return now.Sub(last) > ttl }

// allowed is what a dry run asks before it promises a change, so that it
// fails a name its run would fail (permission denied, a read-only file
// system), not list it as done: that its runner may open lockIn's meta.db
// as a writer, if lockIn is not nil (where it has none, that it may make
// one there: a legacy key's lock, made before anything else is changed),
// and then write and enter each of dirs. It returns the first refusal, in
// the order the run meets them (fsat.AccessAt says what such a look
// cannot tell).
func allowed(lockIn *os.File, dirs ...*os.File) error {
	if lockIn != nil {
		err := fsat.AccessAt(lockIn, db.FileName, unix.W_OK)
		if fsat.IsNotExist(err) {
			err = fsat.AccessAt(lockIn, ".", unix.W_OK|unix.X_OK)
		} else {
			// The run's writer open of meta.db meets this refusal:
			// said in its words, "open", not the look's "access".
			err = fsat.SaidAs("open", err)
		}
		if err != nil {
			return err
		}
	}
	for _, dir := range dirs {
		if err := fsat.AccessAt(dir, ".", unix.W_OK|unix.X_OK); err != nil {
			return err
		}
	}
	return nil
}
