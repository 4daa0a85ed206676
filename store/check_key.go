package store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/faults"
	"sessdb/internal/fsat"
	"sessdb/store/legacy"
)

// AsidePrefix starts the name a repairing Check gives a damaged meta.db it
// moves out of the way, followed by the UTC time of the move.
const AsidePrefix = db.FileName + ".damaged-"

// examine looks at one name under the root and returns what it found. It
// changes nothing. An error is a fault that stops the whole check (the
// deep check could not be run, or ctx ended in the middle of the entry);
// trouble with the entry itself is a finding.
func (s *Store) examine(ctx context.Context, root *os.File, name string, deep deepFunc) ([]Finding, error) {
	var out []Finding
	var examinedDB *unix.Stat_t // meta.db as this look found it
	add := func(path string, kind Kind, format string, args ...any) *Finding {
		f := Finding{Path: path, Kind: kind, Severity: kind.Severity(), Detail: fmt.Sprintf(format, args...), examinedDB: examinedDB}
		if ValidKey(name) {
			f.Key = name
		}
		out = append(out, f)
		return &out[len(out)-1]
	}
	judge := judgeAccess(root, add, rootOwner(root))
	st, err := fsat.LstatAt(root, name)
	switch {
	case fsat.IsNotExist(err):
		return nil, nil // removed since the listing
	case err != nil:
		add(name, KindUnreadable, "%v", err)
		return out, nil
	case isLink(&st):
		note := ""
		if ValidKey(name) {
			note = " (resolve: not-a-regular-file)"
		}
		add(name, KindLink, "a symbolic link%s; sessdb never follows it%s", linkTarget(root, name), note)
		return out, nil
	case fsat.IsDir(&st) && isOwned(name):
		s.examineOwned(root, name, add)
		return out, nil
	case !ValidKey(name):
		add(name, KindNotAKey, "not a key dir (a key is 32 lowercase hex); sessdb leaves it alone")
		if fsat.IsDir(&st) {
			s.findLinksBelow(ctx, root, name, name, add)
		}
		return out, ctx.Err()
	case !fsat.IsDir(&st):
		add(name, KindNotADirectory, "a key's name, but not a directory (mode %#o); resolve: not-a-regular-file", st.Mode)
		return out, nil
	}

	for reads := 1; ; reads++ {
		judge(name, ".", &st)
		again, err := s.examineKey(ctx, root, name, deep, add, judge, &examinedDB)
		if !again || reads == maxKeyReads {
			return out, err
		}
		out, examinedDB = nil, nil
	}
}

// examineKey is examine's look at a key dir. again: the key had no
// meta.db, so nothing was locked, and a writer made one since (a first
// promotion, a migration): what was listed may be its work in flight (a
// promotion temp written under that writer's lock), so the look is to be
// made again, under the lock the new meta.db now gives.
func (s *Store) examineKey(ctx context.Context, root *os.File, name string, deep deepFunc, add addFunc, judge accessFunc, examinedDB **unix.Stat_t) (again bool, err error) {
	k, err := s.openKeyIn(root, name, "")
	switch {
	case err != nil:
		add(name, KindUnreadable, "%v", err)
		judgeUnopened(root, name, judge)
		return false, nil
	case k.missing:
		return false, nil
	case k.notDir:
		add(name, KindNotADirectory, "not a real directory any more")
		return false, nil
	}
	defer k.close()
	if k.locked {
		add(name, KindLocked, "the key's lock was not had in time (a long promotion?); not checked, run check again")
		return false, nil
	}
	if err := s.fault(faults.CheckAfterKeyOpen); err != nil {
		add(name, KindUnreadable, "%v", err)
		return false, nil
	}
	// Before anything is judged, under the shared lock where meta.db
	// opened: a commit since changes it, and then this look's proof of
	// damage is not proof about the file a repair would find.
	if st, err := fsat.LstatAt(k.dir, db.FileName); err == nil {
		*examinedDB = &st
	}
	dbBroken, writerMayHold := s.examineEntries(ctx, k, name, add, judge)
	if err := s.fault(faults.CheckAfterKeyEntries); err != nil {
		add(name, KindUnreadable, "%v", err)
		return false, nil
	}
	for _, err := range k.legacy.NotRead {
		// Read as the legacy reader read it (no value), but the file is
		// there: what it holds is not known, so the key is not judged by
		// it in silence. Each such sidecar is named, as dump lists them.
		path := name
		var pe *os.PathError
		if errors.As(err, &pe) {
			path = name + "/" + filepath.Base(pe.Path)
		}
		add(path, KindUnreadable, "a legacy sidecar that is there but was not read: %v; resolve reads it as no value, as the legacy store did, and migrate fails the key and keeps its files until it can be read", err)
	}
	if err := ctx.Err(); err != nil {
		return false, err // a walk below an odd directory was cut short
	}
	if writerMayHold {
		return true, nil // its promotion temps were not judged
	}
	if k.meta == nil && k.metaErr == nil {
		if _, err := fsat.LstatAt(k.dir, db.FileName); err == nil {
			return true, nil
		}
	}
	if k.layout == LayoutDB && !dbBroken {
		if err := s.examineDB(ctx, k, name, deep, add); err != nil {
			return false, err
		}
	}
	return false, nil
}

// addFunc records a finding and returns it, for the caller to set the
// fields a repair reads later (tmpWhole, unproven).
type addFunc func(path string, kind Kind, format string, args ...any) *Finding

// deepFunc runs the deep check of a key's meta.db; nil skips it.
type deepFunc func(key string) (DeepResult, error)

// examineEntries reports every name in the key dir the store would not
// have left there, and reports whether meta.db is something other than a
// regular file (then it is not examined as a db).
//
// writerMayHold: the look holds no lock of the key (it found no meta.db,
// or one it could not open), and just after the listing a writer may have
// held the key's lock; its promotion temps were then not judged, and the
// look is to be made again. A promotion writes its temp only under that
// lock, the flock of the meta.db at the key dir's name, which stays there
// until the temp is renamed or removed (only the lock's holder unlinks
// meta.db, and a promotion removes its own temp first). So a temp listed
// before an instant at which no writer held the lock (no meta.db, or its
// flock free), and still there after it, was no live promotion's then,
// and none is writing it after: it is a stray. Without that instant the
// temp may be a promotion's work in flight, and it may be gone by the
// time this look asks again whether a meta.db appeared: landed and then
// reaped, or failed and removed with the meta.db it made. A temp so
// listed was reported as a stray temp, a problem that --repair then said
// was "gone since it was found" (TestChaos).
//
// Such a look does not judge a meta.db's creation in flight (creatingDB)
// a hard link: between the link of its temp to meta.db and the removal of
// the temp's name, the one file has two names. A look that found no
// writer at the instant after the listing can still meet that second
// name: the creation linked after that instant, and the look's later
// question whether a meta.db appeared says no once a failed promotion, or
// a reap, removed it again. Such a look reported a hard link, a problem
// nothing had made (TestChaos).
func (s *Store) examineEntries(ctx context.Context, k *keyDir, key string, add addFunc, judge accessFunc) (dbBroken, writerMayHold bool) {
	names, err := fsat.ReadDirNames(k.dir)
	switch {
	case fsat.IsNotExist(err):
		// The dir was removed since it was opened (a reap: a damaged
		// meta.db holds no lock to keep it waiting). Nothing is left to
		// judge, as of a name removed since the listing; it is no I/O
		// error.
		return true, false
	case err != nil:
		add(key, KindUnreadable, "%v", err)
		return true, false
	}
	// After the listing, before any temp is looked at (each lstat below
	// is the "still there after it").
	if k.meta == nil {
		writerMayHold = lockHeldNow(k.dir)
	}
	if err := s.fault(faults.CheckAfterKeyListed); err != nil {
		add(key, KindUnreadable, "%v", err)
		return true, false
	}
	var legacyNames []string
	now := s.opts.Now()
	for _, n := range sortedCopy(names) {
		path := key + "/" + n
		st, err := fsat.LstatAt(k.dir, n)
		switch {
		case fsat.IsNotExist(err):
			continue
		case err != nil:
			add(path, KindUnreadable, "%v", err)
			dbBroken = dbBroken || n == db.FileName
			continue
		case isLink(&st):
			add(path, KindLink, "a symbolic link%s; sessdb never follows it", linkTarget(k.dir, n))
			dbBroken = dbBroken || n == db.FileName
			continue
		case fsat.IsRegular(&st) && st.Nlink > 1:
			if k.meta == nil && (n == db.FileName || strings.HasPrefix(n, db.TempPrefix)) && creatingDB(k.dir, n) {
				// Its second name is a meta.db's creation in flight (the
				// temp linked to meta.db, the temp's name not yet
				// removed), maybe after this look found no writer: not
				// judged a hard link. The meta.db it made is judged by the
				// look made again when one appeared (examineKey), the temp
				// as a temp below.
				break
			}
			// Not a reason to skip the file: it is still the store's, but
			// something outside the key dir can change it.
			f := add(path, KindLink, "a hard link: the file has %d names, so it can change through a path outside the key dir", st.Nlink)
			f.hardLink, f.keyFile = true, n == db.FileName || n == TranscriptName
		}
		mtime := fsat.ModTime(&st)
		switch {
		case n == TranscriptName || n == db.FileName:
			if !fsat.IsRegular(&st) {
				var said string
				if n == TranscriptName {
					said = k.resolvesPast()
				} else {
					said = s.unreadableMetaResolves(k)
				}
				add(path, KindNotRegular, "not a regular file (mode %#o); %s", st.Mode, said)
				dbBroken = dbBroken || n == db.FileName
				continue
			}
			judge(path, n, &st)
		case strings.HasPrefix(n, tmpPrefix):
			if writerMayHold {
				continue // not judged: maybe a live promotion's, looked at again
			}
			if p, _ := k.inFlight(); p != nil && p.Tmp == n {
				continue // the pending promotion's own temp, reported with it
			}
			if !fsat.IsRegular(&st) {
				oddAtStoreName(add, path, "a promotion temp's", &st)
				continue
			}
			add(path, KindStrayTemp, "a promotion temp no record names, %s old", RoundAge(now, mtime))
		case strings.HasPrefix(n, db.TempPrefix):
			if !fsat.IsRegular(&st) {
				oddAtStoreName(add, path, "a meta.db temp's", &st)
				continue
			}
			held, err := db.TempInFlight(k.dir, n)
			switch {
			case fsat.IsNotExist(err):
				continue // linked into place, or removed, since the listing
			case err != nil:
				// Not opened (no descriptor left): whether its creator
				// holds it is not known, and neither is stray.
				add(path, KindUnreadable, "%v", err)
				continue
			case held:
				// A meta.db being created right now (its creator holds the
				// temp's flock until it is linked into place, or is about
				// to take it): a writer's work in flight, which --repair
				// leaves too.
				continue
			}
			add(path, KindStrayTemp, "a meta.db under construction that was never linked into place, %s old", RoundAge(now, mtime))
		case legacy.IsName(n):
			legacyNames = append(legacyNames, n)
			if !fsat.IsRegular(&st) {
				// Not the store's: reap leaves the key whole for it, so
				// check says why. Never opened here (a FIFO would block).
				resolve := "resolve reads it as no value"
				switch {
				case k.layout == LayoutDB:
					resolve = "resolve ignores it beside meta.db"
				case n == legacy.LockName || legacy.IsTemp(n):
					resolve = "resolve never reads it" // the legacy writer's, not a sidecar
				}
				add(path, KindNotRegular, "a legacy file that is not a regular file (mode %#o); %s, and reap leaves the key whole", st.Mode, resolve)
			} else if k.layout != LayoutDB {
				judge(path, n, &st) // a sidecar a resolve reads
				legacyLeftover(add, path, n, now, mtime)
			}
		case strings.HasPrefix(n, AsidePrefix):
			if !fsat.IsRegular(&st) {
				// Its name alone still makes a key without meta.db
				// meta-moved-aside (resolve) and skipped (migrate).
				oddAtStoreName(add, path, "a moved-aside meta.db's (the name keeps a key without meta.db meta-moved-aside)", &st)
				continue
			}
			add(path, KindMovedAside, "a damaged meta.db moved aside; keep it for a post-mortem or remove it")
		default:
			add(path, KindUnknownEntry, "not a file the store writes (mode %#o); left alone", st.Mode)
			if fsat.IsDir(&st) {
				s.findLinksBelow(ctx, k.dir, n, path, add)
			}
		}
	}
	if len(legacyNames) > 0 && k.layout == LayoutDB {
		add(key, KindLegacyBesideDB, "legacy files beside meta.db, ignored by resolve (meta.db is authoritative): %s", strings.Join(legacyNames, ", "))
	}
	return dbBroken, writerMayHold
}

// legacyLeftover reports the legacy store's lock, or a temp of its writer
// (legacy.IsTemp), found as a regular file at n in a key still in the
// legacy layout: no resolve reads either, and no sessdb write makes or
// removes one (sessdb takes no legacy lock), so each is a legacy
// worker's, one that is promoting the key now (a legacy worker beside
// sessdb: unsupported) or one that died doing so. Said apart: a lock
// younger than legacy.LockStale, which makes migrate skip the key as
// locked, one dated in the future, which migrate skips until an hour past
// its date (a clock that was ahead: removed by hand), and a stale one,
// which migrate removes with the temps. A notice: nothing a resolve reads
// is wrong, and check --repair leaves them (a legacy worker's may be
// live; migrate takes them away under its own rules). Sidecars are not
// reported: they are the key's values.
func legacyLeftover(add addFunc, path, n string, now, mtime time.Time) {
	age := RoundAge(now, mtime)
	switch {
	case n == legacy.LockName && Ahead(now, mtime):
		// Fresh for migrate until an hour past its date (migrate's own
		// locked cause says so): waiting an hour, or stopping the legacy
		// workers, does not end it.
		add(path, KindLegacyLeftover, "the legacy store's promotion lock, dated %s in the future (a clock that was ahead): migrate skips the key, locked, until an hour after that date, and stopping the legacy workers does not end it: remove it by hand once no legacy worker runs (sessdb takes no legacy lock: never run a legacy worker beside sessdb); resolve never reads it", RoundAge(mtime, now))
	case n == legacy.LockName && !mtime.Before(now.Add(-legacy.LockStale)):
		add(path, KindLegacyLeftover, "the legacy store's promotion lock, %s old: a legacy worker is promoting the key now, or died doing so within the hour (sessdb takes no legacy lock: never run a legacy worker beside sessdb); migrate skips the key, locked, until the lock is an hour old; resolve never reads it", age)
	case n == legacy.LockName:
		add(path, KindLegacyLeftover, "the legacy store's promotion lock, %s old: stale (over an hour), left by a legacy worker that died holding it; migrate removes it; resolve never reads it", age)
	case legacy.IsTemp(n):
		add(path, KindLegacyLeftover, "a legacy writer's temp, %s old: a legacy worker died writing it, or is writing it now; migrate removes it; resolve never reads it", age)
	}
}

// creatingDB reports whether name in kd, a meta.db or a meta.db temp that
// was found with more than one name by a look holding no lock, is a
// meta.db's creation in flight rather than a hard link: its creator holds
// the temp's flock, the same file's, from before the temp's name exists
// until that name is gone again, so the file is flocked now, or its second
// name is gone since it was found. Otherwise the other name is not the
// creation's: a hard link.
func creatingDB(kd *os.File, name string) bool {
	held, err := fsat.FlockedNow(kd, name)
	switch {
	case held, fsat.IsNotExist(err):
		return true
	case err != nil:
		return false // whether it is held is not known: reported as found
	}
	if testHookCreatingDBAsked != nil {
		testHookCreatingDBAsked(name)
	}
	st, err := fsat.LstatAt(kd, name)
	return fsat.IsNotExist(err) || err == nil && st.Nlink == 1
}

// testHookCreatingDBAsked, when set, is called with the name between
// creatingDB's question of the file's flock (found free, the name still
// the file's) and its last lstat, for a test to remove a name there.
var testHookCreatingDBAsked func(name string)

// lockHeldNow reports whether a writer may hold the lock of the key dir
// kd now, for a look that holds none: false when no meta.db is there, or
// nothing a writer could lock (a link, a FIFO: anything but a regular
// file), or when the flock of the file at the name was free
// (fsat.FlockedNow, whose shared flock is let go at once: a writer polling
// for the lock is kept out no longer than the two calls); true otherwise,
// and where it could not be told (an open or a flock that failed).
// Whether the name still leads to the file locked does not matter
// (FlockedNow's ENOENT is false too): a writer that holds another file
// took it once that file was at the name, after the open, so after the
// listing, and wrote no temp listed.
func lockHeldNow(kd *os.File) bool {
	if st, err := fsat.LstatAt(kd, db.FileName); err == nil && !fsat.IsRegular(&st) {
		return false // a link, a FIFO: nothing a writer locks
	}
	held, err := fsat.FlockedNow(kd, db.FileName) // no meta.db: ENOENT
	return held || err != nil && !fsat.IsNotExist(err)
}

// oddAtStoreName reports what is at the name of a file the store makes (a
// temp, a moved-aside meta.db) but is not a regular file, a FIFO or a
// directory: no writer or repair made it, so no temp sweep of check
// --repair or reap removes it, and reap leaves the key whole for it. It is
// the not-a-regular-file problem --repair leaves, never opened (a FIFO
// would block), as a legacy file that is not a regular file is; not a
// stray temp that --repair would say it removed, nor a damaged meta.db.
func oddAtStoreName(add addFunc, path, what string, st *unix.Stat_t) {
	add(path, KindNotRegular, "not a regular file (mode %#o) at %s name: no writer or repair made it; never opened, --repair leaves it, and reap leaves the key whole", st.Mode, what)
}

// examineDB checks a meta.db that is a regular file: its open, its meta
// pages, bbolt's full check, its records, the transcript against its
// record, a pending promotion.
func (s *Store) examineDB(ctx context.Context, k *keyDir, key string, deep deepFunc, add addFunc) error {
	path := key + "/" + db.FileName
	if k.meta == nil {
		if errors.Is(k.metaErr, db.ErrNewerSchema) {
			add(path, KindMetaNewerSchema, "%v; use a sessdb that knows its schema", k.metaErr)
		} else {
			add(path, KindMetaDamaged, "%v (%s)", k.metaErr, s.unreadableMetaResolves(k))
		}
		return nil
	}
	if p := keyMetaPages(k); p.Fallback {
		add(path, KindMetaPageInvalid, "%s", p.fallbackDetail())
	}
	if deep != nil {
		res, err := deep(key)
		if err == nil && res.DirIno != 0 {
			// Run in the dir the key's name led to then: proof only
			// about the dir this look holds, and the file in it that its
			// shared lock keeps as it is.
			if held, ferr := fsat.Fstat(k.dir); ferr != nil || uint64(held.Dev) != res.DirDev || uint64(held.Ino) != res.DirIno {
				res = DeepResult{Incomplete: "it ran in another directory than the key dir this check holds (the key's name led elsewhere meanwhile)"}
			}
		}
		if err == nil && res.FileIno != 0 {
			// The same for the file: meta.db's name may have led to
			// another file than the one this look holds, locked.
			if dev, ino, ferr := k.meta.FileID(); ferr != nil || dev != res.FileDev || ino != res.FileIno {
				res = DeepResult{Incomplete: "it ran on another file than the meta.db this check holds (its name led elsewhere meanwhile)"}
			}
		}
		switch {
		case err != nil:
			return err
		case len(res.Problems) > 0:
			add(path, KindMetaCheckFailed, "bbolt's consistency check: %s", strings.Join(res.Problems, "; "))
		case res.Incomplete != "":
			f := add(path, KindMetaCheckFailed, "bbolt's consistency check did not complete: %s; that proves nothing about the file", res.Incomplete)
			f.unproven = true
		}
	}
	if k.metaErr != nil {
		add(path, KindRecordUndecodable, "%v (%s)", k.metaErr, s.unreadableMetaResolves(k))
		return nil
	}
	// The history is read in a transaction of its own: a read that fails
	// fails its whole transaction, and an entry that does not decode,
	// where meta/ does, is the history's alone.
	var hist, full error
	err := k.meta.View(func(tx *db.Tx) error { _, err := tx.Meta(); return err })
	if err == nil {
		hist = k.meta.View(func(tx *db.Tx) error {
			if _, err := tx.History(0); err != nil {
				return err
			}
			// A history whose newest entry holds the last sequence number
			// decodes, but wedges every write of the key.
			full = tx.HistoryFull()
			return nil
		})
	}
	switch {
	case errors.Is(err, db.ErrDamaged):
		add(path, KindRecordUndecodable, "%v", err)
	case err != nil:
		add(path, KindUnreadable, "%v", err)
	case errors.Is(hist, db.ErrDamaged):
		// Only history entries: the record and stamps decoded (the open
		// read them). --repair drops the entries in place.
		add(path, KindRecordUndecodable, "%v", hist).historyDamaged = true
	case hist != nil:
		add(path, KindUnreadable, "%v", hist)
	case errors.Is(full, db.ErrDamaged):
		// Only its numbering is wrong: --repair renumbers it in place.
		add(path, KindRecordUndecodable, "%v", full).historyFull = true
	case full != nil:
		add(path, KindUnreadable, "%v", full)
	}

	tpath := key + "/" + TranscriptName
	p, err := k.inFlight()
	if err != nil {
		// Not looked at: neither in flight nor settled is known.
		add(key+"/"+k.sidecars.Pending.Tmp, KindUnreadable, "%v", err)
		return nil
	}
	whole, notRegular := false, ""
	if pendingTempName(p) {
		var err error
		if whole, err = pendingTempWhole(ctx, k.dir, p); err != nil {
			if cerr := ctx.Err(); cerr != nil {
				return cerr // stopped by the caller: nothing to say of the temp
			}
			// Not read: that says nothing of the temp, which "missing or
			// not what the record says" would (and --repair's report of
			// its roll-forward after it).
			add(key+"/"+p.Tmp, KindUnreadable, "%v", err)
			return nil
		}
		notRegular = PendingTempNotRegular(k.dir, p)
	}
	if p != nil {
		state := "whole: a roll-forward renames it over current.jsonl"
		switch {
		case whole:
		case notRegular != "":
			state = "a " + notRegular + ", not a regular file: no roll-forward renames or removes it, so the record stays pending until it is removed by hand (a resolve serves the generation before it where that is in place, else promotion-lost; the key's next promotion replaces the record)"
		default:
			state = "missing or not what the record says: a roll-forward removes it and leaves the record pending (a resolve serves the generation before it where that is in place, else promotion-lost)"
		}
		f := add(path, KindPendingPromotion, "gen %d committed but not renamed into place; its temp %s is %s", p.Gen, p.Tmp, state)
		f.tmpWhole, f.tmpNotRegular = whole, notRegular != ""
	}
	id := k.identity
	t := k.obs.Transcript // current.jsonl as found, before a resolve's view serves a temp
	if whole || !t.Exists && id == nil || t.Exists && !t.Regular {
		return nil // resolve copies the whole temp; or nothing to say of current.jsonl
	}
	var in *look
	if p != nil && t.Exists && id != nil {
		// A resolve's copy reads current.jsonl only if it falls back to
		// it from the temp: the finding describes it whatever the copy
		// does, held against the record and the generation before it.
		l, err := k.look(ctx, k.inPlaceBound(), true, s.opts.Bounds.MaxBytes)
		if err != nil {
			return err
		}
		in = &l
	}
	// What a resolve says now is what dump says: the same judgement of
	// the same files (judgeServed), for a job matching the key's stamps.
	sv, err := s.judgeServed(ctx, k, nil, id != nil)
	if err != nil {
		return err
	}
	if sv.pendingErr != nil {
		add(key+"/"+p.Tmp, KindUnreadable, "%v", sv.pendingErr)
		return nil
	}
	says := sv.verdict.Reason
	if says == Undetermined {
		says = sv.verdict.IfMatched
	}
	switch {
	case !t.Exists:
		f := add(tpath, KindTranscriptMismatch, "missing, but the record describes gen %d (%d bytes); resolve: %s", id.Gen, id.Size, says)
		f.resolves = says
	case id == nil:
		f := add(tpath, KindTranscriptMismatch, "meta.db records no transcript; resolve: %s", says)
		f.resolves = says
	default:
		if in == nil {
			in = sv.inPlace // the copy's first file: no temp is served
		}
		if in == nil {
			return nil
		}
		v := in.against(id)
		switch v.Result {
		case VerifyMismatch:
			what := ", changed out of band or torn"
			if pp := k.sidecars.Pending; pp != nil && in.c.summed && in.c.is(pp.Prev) {
				what = fmt.Sprintf(": it is gen %d, the generation before, and gen %d was never renamed into place", pp.Prev.Gen, pp.Gen)
			}
			f := add(tpath, KindTranscriptMismatch, "%s (gen %d)%s; resolve: %s", v.Detail, id.Gen, what, says)
			f.resolves = says
		case VerifyUnreadable:
			add(tpath, KindUnreadable, "%s", v.Detail)
		}
	}
	return nil
}

// findLinksBelow reports every symbolic link under name in parent, the
// dir at path (relative to the root), which is not a key dir; the walk
// never follows a link. It goes from descriptor to descriptor, each
// directory opened with O_DIRECTORY|O_NOFOLLOW: a walk by path from the
// root read whatever a directory was swapped for after its lstat, a
// link's target outside the root, or a FIFO, whose open then hung the
// check. A tree of any size can sit there, so the walk stops when ctx
// ends (the caller then reports ctx's error, not a half-walked entry),
// and where its path would pass PATH_MAX, as the walk by path did: that
// directory is reported unreadable, so that what is below it (a link) is
// not hidden without a word.
func (s *Store) findLinksBelow(ctx context.Context, parent *os.File, name, path string, add addFunc) {
	if ctx.Err() != nil {
		return
	}
	if len(path) >= unix.PathMax {
		add(path, KindUnreadable, "not walked: its path is past PATH_MAX (%d bytes); links below it are not looked for", len(path))
		return
	}
	dir, err := fsat.OpenDirAt(parent, name)
	if err != nil {
		// Swapped since it was listed: a link is reported, not followed;
		// anything else is not a directory to walk. A directory that
		// could not be opened (no descriptor left, a permission) is
		// reported, so that what is below it is not hidden without a word.
		st, serr := fsat.LstatAt(parent, name)
		switch {
		case serr == nil && isLink(&st):
			add(path, KindLink, "a symbolic link; sessdb never follows it")
		case serr == nil && fsat.IsDir(&st):
			add(path, KindUnreadable, "not walked: %v; links below it are not looked for", err)
		}
		return
	}
	defer dir.Close()
	names, err := fsat.ReadDirNames(dir)
	if err != nil {
		if !fsat.IsNotExist(err) { // removed since it was opened
			add(path, KindUnreadable, "not walked: %v; links below it are not looked for", err)
		}
		return
	}
	for _, n := range sortedCopy(names) {
		if ctx.Err() != nil {
			return
		}
		st, err := fsat.LstatAt(dir, n)
		switch {
		case err != nil:
		case isLink(&st):
			add(path+"/"+n, KindLink, "a symbolic link; sessdb never follows it")
		case fsat.IsDir(&st):
			s.findLinksBelow(ctx, dir, n, path+"/"+n, add)
		}
	}
}

// legacyFiles lists the legacy store's files present in a key dir. A
// listing that failed (no descriptor left for it, an I/O error) is an
// error: read as "none", a mixed key would be reported as a db key, and a
// legacy key with no transcript as empty.
func legacyFiles(k *keyDir) ([]string, error) {
	names, err := fsat.ReadDirNames(k.dir)
	switch {
	case fsat.IsNotExist(err):
		return nil, nil // the dir is gone: nothing in it
	case err != nil:
		return nil, err
	}
	var out []string
	for _, n := range names {
		if legacy.IsName(n) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out, nil
}

// sortedCopy returns names sorted: reports list a key dir's entries in
// name order, whatever order the directory returned them in.
func sortedCopy(names []string) []string {
	out := append([]string(nil), names...)
	sort.Strings(out)
	return out
}

// isLink reports a symbolic link, from an lstat.
func isLink(st *unix.Stat_t) bool { return st.Mode&unix.S_IFMT == unix.S_IFLNK }

// linkTarget is " to <target>" for a link, for the operator deciding what
// to do with it; it is read, never followed.
func linkTarget(dir *os.File, name string) string {
	buf := make([]byte, 512)
	n, err := unix.Readlinkat(int(dir.Fd()), name, buf)
	if err != nil {
		return ""
	}
	return fmt.Sprintf(" to %q", buf[:n])
}

// Ahead reports whether then is after now. Where time.Sub clamps (a span
// past 292 years), even its sign is not sure: time.Unix wraps a second
// count near either end of 64 bits (tmpfs keeps any mtime it is given)
// to the other end, so the Unix seconds, which are exact, decide.
func Ahead(now, then time.Time) bool {
	if d := now.Sub(then); d != math.MaxInt64 && d != math.MinInt64 {
		return d < 0
	}
	return then.Unix() > now.Unix()
}

// RoundAge renders the age of then at now to the unit an operator reads
// at a glance: whole days from 48 hours, else whole hours, minutes or
// seconds. A negative age, a clock that is off, is "0s (dated in the
// future)". Every age check prints, on every backend, is rendered by it,
// and so is every past age dump prints (a future one dump shows as
// "ahead"). It takes the two instants, not their difference, because
// time.Sub clamps a span past 292 years to 106751 days: such an age (an
// mtime or a header dated in year 1, dump --at 9999-12-31) is counted in
// whole days from the Unix seconds, which hold any time a file system,
// RFC 3339 or a record can give.
func RoundAge(now, then time.Time) string {
	d := now.Sub(then)
	switch {
	case Ahead(now, then):
		return "0s (dated in the future)"
	case d == math.MaxInt64 || d == math.MinInt64:
		// Clamped: whole days from the Unix seconds, whose difference,
		// taken unsigned, fits (then is not after now).
		return fmt.Sprintf("%dd", (uint64(now.Unix())-uint64(then.Unix()))/(24*60*60))
	case d >= 48*time.Hour:
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	case d >= time.Hour:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d >= time.Minute:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return fmt.Sprintf("%ds", d/time.Second)
}

// unreadableMetaResolves says what a resolve makes of k, whose meta.db
// cannot be read (damaged, not a regular file): meta-unreadable, unless a
// rung of the ladder before it names the cold start first (no transcript,
// an empty or a too large one), which no job changes.
func (s *Store) unreadableMetaResolves(k *keyDir) string {
	obs := k.obs
	obs.MetaUnreadable = true
	return "resolve: " + string(gates.Evaluate(obs, s.opts.Bounds, gates.Job{}, s.opts.Now()).Reason)
}

// resolvesPast says what a resolve makes of the key, in a check's line
// about current.jsonl, found not to be a regular file. A promotion in
// flight is served from its temp, past what is at current.jsonl, but the
// temp cannot be renamed over a directory there: the roll-forward of
// every writer and of --repair fails until it is gone. (Whether the temp
// is whole is the pending promotion's own line.)
func (k *keyDir) resolvesPast() string {
	if p, err := k.inFlight(); p != nil && err == nil {
		return fmt.Sprintf("the promotion in flight (gen %d) is served from its temp while that is whole (else resolve: promotion-lost), but no roll-forward can rename the temp over this, so every promotion fails until it is gone: remove it by hand, then run check --repair", p.Gen)
	}
	return "resolve: not-a-regular-file"
}
