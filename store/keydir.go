package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/faults"
	"sessdb/internal/fsat"
	"sessdb/store/legacy"
	"sessdb/store/transcript"
)

// keyDir is one key dir opened for reading: the observation the ladder
// needs, and what the copy is checked against. Everything in it is reached
// through the key dir's descriptor, never through a path, and the
// transcript is copied through the descriptor it was observed through.
type keyDir struct {
	dir        *os.File
	meta       *db.DB // nil for the legacy layout or an unreadable db
	transcript *os.File
	tst        unix.Stat_t
	layout     Layout
	obs        gates.Observation
	identity   *db.Transcript // the db's record of current.jsonl
	expectSize int64
	missing    bool // no key dir
	notDir     bool // the key dir is a link or not a directory
	locked     bool // the shared lock was not had in time
	sidecars   db.Sidecars
	pending    *db.Pending // resolve only: a promotion committed, renamed or not
	fromTemp   bool        // resolve only: the transcript opened is pending's temp
	// tempLost: pending's temp, still at its name, is not what its commit
	// recorded (see servePending): the key holds the generation before
	// it, where that is in place, or nothing.
	tempLost bool
	metaErr  error
	// migratedUnder: no meta.db when the key was opened, and one after its
	// legacy files were read (see openKey).
	migratedUnder bool
	header        transcript.Header
	headerErr     error
	// legacy is what the legacy sidecars read as (observeLegacy), with
	// what obs does not carry: the reads that failed (check names each,
	// resolve's log a stamp's) and the files that gave no value (dump
	// shows them).
	legacy legacy.Observed
}

// openKey opens key's dir, its meta.db (shared lock) and its transcript,
// and gathers the ladder's observation; a resolve's view, dump and check
// each take what they need from it. point, if not "", is the fault point
// of the window between the key dir's open and everything opened through
// it (the A,B,A swap tests aim there); a resolve's open stops at
// ResolveAfterMetaOpen too.
//
// A legacy key is read with no lock, and a migration to meta.db commits
// the db first and then removes the legacy files one by one: read while
// that happens, the files are half there (the context gone, the venue
// still there to pass the legacy re-check). A key whose meta.db appeared
// while its legacy files were read is read again, as the db key it has
// become; only a rollback and another migration could move it again.
func (s *Store) openKey(key string, point faults.Point) (*keyDir, error) {
	return s.openKeyContext(context.Background(), key, point)
}

// openKeyContext is openKey, its wait for the key's lock ended once ctx is
// done, with ctx's error (a resolve's, ResolveContext).
func (s *Store) openKeyContext(ctx context.Context, key string, point faults.Point) (*keyDir, error) {
	return s.openKeyInContext(ctx, nil, key, point)
}

// openKeyIn is openKey under root, a walk's listed root held open (nil:
// the root at its path, opened for this key alone).
func (s *Store) openKeyIn(root *os.File, key string, point faults.Point) (*keyDir, error) {
	return s.openKeyInContext(context.Background(), root, key, point)
}

// openKeyInContext is openKeyIn with openKeyContext's ctx.
func (s *Store) openKeyInContext(ctx context.Context, root *os.File, key string, point faults.Point) (*keyDir, error) {
	for reads := 1; ; reads++ {
		k, err := s.openKeyOnce(ctx, root, key, point)
		if err != nil || !k.migratedUnder {
			return k, err
		}
		k.close()
		if reads == maxKeyReads {
			return nil, fmt.Errorf("%s: the key moved between the legacy layout and meta.db under %d reads", key, reads)
		}
	}
}

// maxKeyReads bounds the reads of one key by openKey.
const maxKeyReads = 3

// openKeyOnce is one read of the key for openKey.
func (s *Store) openKeyOnce(ctx context.Context, root *os.File, key string, point faults.Point) (*keyDir, error) {
	k := &keyDir{}
	if root == nil {
		var err error
		if root, err = fsat.OpenDir(s.root); err != nil {
			if fsat.IsNotExist(err) {
				k.missing = true
				return k, nil
			}
			return nil, err
		}
		defer root.Close()
	}
	var err error
	k.dir, err = fsat.OpenDirAt(root, key)
	if err != nil {
		switch {
		case fsat.IsNotExist(err):
			k.missing = true
			return k, nil
		case errors.Is(err, fsat.ErrNotDir):
			k.notDir = true
			return k, nil
		}
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			k.close()
		}
	}()
	if point != "" {
		if err := s.fault(point); err != nil {
			return nil, err
		}
	}

	// The lock comes first: with it held no promotion can rename a new
	// transcript in between opening the file and reading its identity.
	k.meta, err = db.OpenReaderContext(ctx, k.dir, fsat.Join(k.dir, db.FileName), s.dbOptions())
	if point != "" {
		if ferr := s.fault(faults.ResolveAfterMetaOpen); ferr != nil {
			if err == nil {
				k.meta.Close()
			}
			return nil, ferr
		}
	}
	if !errors.Is(err, db.ErrLockTimeout) {
		moved, merr := movedAway(root, k.dir, key)
		if merr != nil {
			if err == nil {
				k.meta.Close()
			}
			return nil, merr
		}
		if moved {
			// Moved aside while this read waited for the lock (a
			// quarantine, a reap): the dir is no longer the key, and
			// every read from now on finds the key absent. Its record and
			// transcript are not the key's to hand over or report.
			if err == nil {
				k.meta.Close()
			}
			k.dir.Close()
			ok = true
			return &keyDir{missing: true}, nil
		}
	}
	switch {
	case err == nil:
		k.layout = LayoutDB
	case errors.Is(err, fs.ErrNotExist):
		k.layout = LayoutLegacy
	case errors.Is(err, db.ErrLockTimeout):
		k.locked = true
		ok = true
		return k, nil
	case errors.Is(err, db.ErrDamaged), errors.Is(err, db.ErrNewerSchema):
		k.layout = LayoutDB
		k.metaErr = err
		k.obs.MetaUnreadable = true
	default:
		return nil, err
	}
	if k.meta != nil {
		err := k.meta.View(func(tx *db.Tx) (err error) { k.sidecars, err = tx.Sidecars(); return err })
		if err != nil {
			if !errors.Is(err, db.ErrDamaged) {
				return nil, err
			}
			k.metaErr = err
			k.obs.MetaUnreadable = true
		}
	}

	if err := k.openTranscript(TranscriptName); err != nil {
		return nil, err
	}
	switch {
	case k.obs.MetaUnreadable:
	case k.meta != nil && k.sidecars == (db.Sidecars{}):
		// A meta.db with no record at all vouches for nothing: it is a
		// first promotion, a migration or a reap's lock caught before its
		// commit. The legacy files, if any, still decide, as they will for
		// the promotion or migration that follows (it seeds from them).
		k.layout = LayoutLegacy
		if err := k.observeLegacy(); err != nil {
			return nil, err
		}
		// Unless a repair moved the key's meta.db aside: the empty file
		// is then a lock's, left by a kill or brought back by a power
		// cut, and the legacy files are as stale as without it.
		if k.obs.MetaMovedAside, err = movedAside(k.dir); err != nil {
			return nil, err
		}
	case k.meta != nil:
		k.observeDB()
	default:
		if err := k.observeLegacy(); err != nil {
			return nil, err
		}
		if k.obs.MetaMovedAside, err = movedAside(k.dir); err != nil {
			return nil, err
		}
		_, err := fsat.LstatAt(k.dir, db.FileName)
		k.migratedUnder = !fsat.IsNotExist(err)
	}
	ok = true
	return k, nil
}

// movedAway reports whether kd, opened at key under root, was moved aside
// since by the store: its name is gone, or it is at one of the key's
// quarantine or reap-owned names. Whoever moves a key dir holds its lock,
// so for a reader that holds it too the answer stays true until it lets
// go. A dir merely not at the key's name (another dir or a link put there
// by hand) is still read through its descriptor, as it was opened: only
// the store's own moves take a key out of service. The root is listed
// only when the name no longer leads to kd, which no read otherwise meets.
// A dir removed under its descriptor (a reap's) that its file system no
// longer answers for (fsat.IsGone: NFS, a FUSE daemon that works by path)
// is moved away too: on ext4 the same read finds its name gone.
func movedAway(root, kd *os.File, key string) (bool, error) {
	held, err := fstatHeld(kd)
	if fsat.IsGone(err) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	now, err := fsat.LstatAt(root, key)
	switch {
	case fsat.IsNotExist(err):
		return true, nil
	case err != nil:
		return false, err
	case now.Dev == held.Dev && now.Ino == held.Ino:
		return false, nil
	}
	found, _, err := asideAt(root, &held, key)
	return found, err
}

// fstatHeld is fsat.Fstat of a key dir held open, for movedAway; a
// variable so that a test can stand in for a file system that no longer
// answers for a removed dir.
var fstatHeld = fsat.Fstat

// asideAt reports whether the dir held (its fstat) is at one of key's
// names aside under root, a quarantine or a reap-owned one, and whether
// that name is reap-owned. It lists the root: only a caller that found the
// key's own name no longer leading to the dir asks.
func asideAt(root *os.File, held *unix.Stat_t, key string) (found, reaped bool, err error) {
	names, err := fsat.ReadDirNames(root)
	if err != nil {
		return false, false, err
	}
	for _, n := range names {
		k, r := ReapedKey(n)
		if !r {
			k, _ = QuarantinedKey(n)
		}
		if k != key {
			continue
		}
		if st, err := fsat.LstatAt(root, n); err == nil && st.Dev == held.Dev && st.Ino == held.Ino {
			return true, r, nil
		}
	}
	return false, false, nil
}

// openTranscript opens name in the key dir as the transcript, without
// following a link and without blocking on a FIFO, and observes it: what
// it is (fstat of the descriptor, not of the name), and its first line.
// Anything but a regular file at the name (a link, a FIFO, a socket, a
// device) is observed from its lstat as there but not regular, and never
// opened: the open of a socket or of a device with no driver fails
// (ENXIO), which made a resolve a fault where the ladder names
// not-a-regular-file, and the open of a device runs its driver.
func (k *keyDir) openTranscript(name string) error {
	// What was observed of another file (current.jsonl, before a pending
	// temp is served) is not this one's: a first line that does not parse
	// must not leave the last one's header judged.
	k.obs.Transcript, k.obs.Header, k.header, k.headerErr = gates.Transcript{}, gates.Header{}, transcript.Header{}, nil
	f, st, err := fsat.OpenRegularAt(k.dir, name)
	switch {
	case fsat.IsNotExist(err):
		return nil
	case errors.Is(err, fsat.ErrNotRegular):
		k.observeNotRegular(name)
		return nil
	case err != nil:
		return err
	}
	k.obs.Transcript = gates.Transcript{Exists: true, Regular: true, Size: st.Size, ModTime: fsat.ModTime(&st)}
	k.transcript, k.tst, k.expectSize = f, st, st.Size
	if st.Size > 0 {
		h, err := transcript.Header{}, faults.At(faults.TranscriptHeaderRead)
		if err == nil {
			h, err = transcript.ReadHeader(io.NewSectionReader(f, 0, st.Size))
		}
		if err != nil && !errors.Is(err, transcript.ErrEmpty) && !errors.Is(err, transcript.ErrHeaderTooLong) && !errors.Is(err, transcript.ErrNotJSON) {
			// The read failed (an I/O error): that says nothing of the
			// first line, which the ladder would judge unparseable, a
			// closed rung whose cold run then replaces the conversation.
			// A fault, as the copy's read error is.
			k.transcript = nil
			f.Close()
			return err
		}
		k.header, k.headerErr = h, err
		if err == nil {
			k.obs.Header.IsSession = h.IsSession()
			if h.TimestampIsString {
				k.obs.Header.Timestamp, k.obs.Header.TimestampOK = transcript.ParseTimestamp(h.Timestamp)
			}
		}
	}
	return nil
}

// observeNotRegular observes name as there but not a regular file, with
// its own size and time (lstat), never a link's target's: what dump
// reports of it, and the only clock a legacy key has.
func (k *keyDir) observeNotRegular(name string) {
	k.obs.Transcript = gates.Transcript{Exists: true}
	if st, err := fsat.LstatAt(k.dir, name); err == nil {
		k.obs.Transcript.Size, k.obs.Transcript.ModTime = st.Size, fsat.ModTime(&st)
	}
}

// observeDB turns the record into the ladder's observation. An absent
// stamp stays absent (the venue rung reads it as "local", the version
// rung refuses it), never an empty value.
func (k *keyDir) observeDB() {
	sc := k.sidecars
	if sc.Transcript != nil {
		k.identity = sc.Transcript
		k.obs.LastPromotion = time.Unix(0, sc.Transcript.PromotedAt)
		k.expectSize = sc.Transcript.Size
		// A lost temp's fallback is the generation before it (Accept):
		// the copy must be allowed to read that one whole.
		if k.pending != nil {
			k.expectSize = k.inPlaceBound()
		}
	}
	k.obs.Venue = stampOf(sc.Venue)
	k.obs.PiVersion = stampOf(sc.PiVersion)
	if sc.ResumeChain != nil {
		k.obs.ResumeChain = *sc.ResumeChain
	}
	if sc.Context != nil {
		k.obs.Context = &gates.Context{Tokens: sc.Context.Tokens, Window: sc.Context.Window, Model: sc.Context.Model}
	}
}

// inPlaceBound is the largest identity current.jsonl of a db key with a
// record can match: the record's, or the generation before its pending
// promotion, which is in place when that promotion's temp was lost or
// damaged before its rename.
func (k *keyDir) inPlaceBound() int64 {
	n := k.sidecars.Transcript.Size
	if p := k.sidecars.Pending; p != nil && p.Prev != nil {
		n = max(n, p.Prev.Size)
	}
	return n
}

// observeLegacy reads the legacy sidecar files with the legacy rules.
// The legacy store read a bound's sidecar only when its bound was set;
// reading it always changes no verdict (an unreadable chain is 0, an
// unreadable context no measurement, and a bound that is off ignores
// both), and lets dump report every value. A sidecar not read for want of
// a descriptor or memory is a fault (legacy.Observe), as meta.db's open is.
func (k *keyDir) observeLegacy() error {
	o, err := legacy.Observe(k.dir)
	if err != nil {
		return err
	}
	k.obs.Venue, k.obs.PiVersion, k.obs.ResumeChain, k.obs.Context = o.Venue, o.PiVersion, o.ResumeChain, o.Context
	k.legacy = o
	return nil
}

// movedAside reports whether a repair moved a damaged meta.db aside in the
// key dir (check --repair's AsidePrefix names). It is looked for only in a
// key dir without meta.db, so a key's first promotion ends it.
// A listing that failed (no descriptor left for it, an I/O error) is an
// error: read as "none moved aside", it would judge the key by the stale
// legacy files the moved-aside meta.db had replaced.
func movedAside(kd *os.File) (bool, error) {
	names, err := fsat.ReadDirNames(kd)
	if err != nil {
		if fsat.IsNotExist(err) {
			return false, nil // the dir is gone: nothing in it was moved aside
		}
		return false, err
	}
	for _, n := range names {
		if strings.HasPrefix(n, AsidePrefix) {
			return true, nil
		}
	}
	return false, nil
}

// inFlight is the key's pending promotion when it is still in flight
// (committed, its temp still at its name), else nil: one that landed keeps
// its entry until the next writer's commit replaces it. A look at the temp
// that failed (see pendingInFlight) is its error, the entry given as in
// flight: a reader then opens the temp, and the open tells
// (servePending); what could not be told is check's to report.
func (k *keyDir) inFlight() (*db.Pending, error) {
	p := k.sidecars.Pending
	if k.metaErr != nil {
		return nil, nil
	}
	switch in, err := pendingLook(k.dir, p); {
	case err != nil:
		return p, err
	case !in:
		return nil, nil
	}
	return p, nil
}

// servePending makes a committed promotion's temp the transcript a resolve
// copies, when the promotion was not yet renamed into place (a crash, or
// a power cut, between the two): the temp is whole whenever the commit
// is, so the conversation resumes at exactly the state that was
// committed, and nothing is written. The pending entry is kept either
// way, for the generation before it (see Accept).
//
// With checkWhole (a resolve's view) the temp is first read whole, and
// one that is not what the commit recorded (damaged out of band: no crash
// leaves a temp so) is not served: the key holds the generation before
// it where that is in place (tempLost), which is served instead, and the
// ladder never judges the damaged temp. Without it (dump and check, whose
// copy is followed under their own bounds and interrupt, see follow) the
// temp is served, and the copy's Accept gives up on it the same way. A
// read of the temp ctx stopped is ctx's error.
func (k *keyDir) servePending(ctx context.Context, checkWhole bool) error {
	if k.metaErr != nil || k.sidecars.Pending == nil {
		return nil
	}
	k.pending = k.sidecars.Pending
	p, _ := k.inFlight() // a look that failed: the open below tells
	if p == nil {
		k.observeDB() // expectSize covers the generation before it
		return nil
	}
	if err := faults.At(faults.PendingAfterLook); err != nil {
		return err
	}
	if k.transcript != nil {
		k.transcript.Close()
		k.transcript = nil
	}
	k.fromTemp = true
	if err := k.openTranscript(p.Tmp); err != nil {
		return err
	}
	if !k.obs.Transcript.Exists {
		// Gone since inFlight looked (removed by hand: no writer runs
		// under the shared lock), or looked at through an lstat that
		// failed: settled, as inFlight would now say, and what is in
		// place is served. Without this the ladder judged current.jsonl's
		// observation and the copy read a temp never opened (a nil file:
		// the process died).
		k.fromTemp = false
		if err := k.openTranscript(TranscriptName); err != nil {
			return err
		}
		k.observeDB()
		return nil
	}
	k.observeDB()
	// A temp there but not a regular file (a link, a FIFO: put there out
	// of band, no crash leaves one) is not whole for dump and check
	// either: no writer renames it. Judged itself, it was
	// not-a-regular-file in dump and check where a resolve resumed what
	// is in place.
	whole := k.transcript != nil
	if whole && checkWhole {
		var err error
		if whole, err = k.servedWhole(ctx, p); err != nil {
			return err
		}
	}
	if !whole {
		k.tempLost = true
		return k.reopenInPlace()
	}
	return nil
}

// servedWhole reports whether the pending temp k has open, a regular
// file, is what p's commit recorded: its size and CRC32C. A read that
// failed, or that ctx stopped, says nothing of the temp: it is the error.
func (k *keyDir) servedWhole(ctx context.Context, p *db.Pending) (bool, error) {
	if k.tst.Size != p.Size {
		return false, nil
	}
	if err := faults.At(faults.PendingTempCheck); err != nil {
		return false, err
	}
	return sameContent(ctx, k.transcript, p.Size, p.CRC32C)
}

// stampOf is a db stamp as the ladder reads it. A db stamp is never
// unreadable: a record that does not decode is meta-unreadable as a whole.
func stampOf(p *string) gates.Stamp {
	if p == nil {
		return gates.Stamp{State: gates.StampAbsent}
	}
	return gates.Stamp{State: gates.StampPresent, Value: *p}
}

// copied is what is known of a copy of the key's transcript: its size,
// and its CRC32C when it was read. A resolve's copy always is; dump
// without --verify reads only the first line, and a copy of the size an
// identity wants is then taken to match it, since only the bytes could
// tell otherwise.
type copied struct {
	size   int64
	sum    uint32
	summed bool // sum is the copy's CRC32C
}

// is reports whether c is the transcript t identifies.
func (c copied) is(t *db.Transcript) bool {
	return t != nil && t.Size == c.size && (!c.summed || t.CRC32C == uint64(c.sum))
}

// matches reports whether the copy c is the transcript the key's
// sidecars describe. A db key must match its record; a db key with no
// record describes no transcript at all. A legacy key has no record: the
// copy must match the file as it was when judged, and the name must still
// refer to that file (the legacy store's identity re-check, since nothing
// locks a legacy key).
func (k *keyDir) matches(c copied) (bool, error) {
	if k.layout == LayoutDB {
		return c.is(k.identity), nil
	}
	if c.size != k.tst.Size {
		return false, nil
	}
	err := faults.At(faults.LegacyIdentityLstat)
	var st unix.Stat_t
	if err == nil {
		st, err = fsat.LstatAt(k.dir, TranscriptName)
	}
	switch {
	case fsat.IsNotExist(err):
		return false, nil // gone: replaced, or removed
	case err != nil:
		// Not looked at (for want of kernel memory, an I/O error): that
		// says nothing of the file, which transcript-replaced, a closed
		// rung whose cold run then replaces the conversation, would.
		return false, err
	}
	return st.Dev == k.tst.Dev && st.Ino == k.tst.Ino && st.Size == k.tst.Size && st.Mtim == k.tst.Mtim, nil
}

// matchesPrev reports whether the copy c is the generation before a
// committed promotion: what is in place when that promotion's temp was
// lost before its rename.
func (k *keyDir) matchesPrev(c copied) bool {
	return k.pending != nil && c.is(k.pending.Prev)
}

// reopenInPlace replaces the pending temp that was opened as the
// transcript with current.jsonl, under the same lock.
func (k *keyDir) reopenInPlace() error {
	if k.transcript != nil {
		k.transcript.Close()
		k.transcript = nil
	}
	k.fromTemp = false
	if err := k.openTranscript(TranscriptName); err != nil {
		return err
	}
	if p := k.pending.Prev; p != nil {
		k.expectSize = p.Size // no more is read than the generation it could be
	}
	return nil
}

// close releases what openKey opened, and with meta.db's flock the shared
// lock.
func (k *keyDir) close() {
	if k.transcript != nil {
		k.transcript.Close()
	}
	if k.meta != nil {
		k.meta.Close()
	}
	if k.dir != nil {
		k.dir.Close()
	}
}

// base is what the key holds, as a ticket records it (see baseOf).
func (k *keyDir) base() Base {
	if k.transcript == nil {
		return baseOf(k.identity, nil)
	}
	return baseOf(k.identity, &k.tst)
}

// pendingInFlight reports whether p is a promotion still in flight:
// committed, with its temp still at its name. A promotion that lands keeps
// its pending entry until the next writer's commit replaces it (DESIGN,
// promote step 6: pending is cleared "at the next open"), so an entry whose
// temp is gone is settled. Only a crash between the commit and the rename
// leaves a temp at the name: temp names are random, and the sweep removes
// every temp no entry in flight names. A name that is not a promotion
// temp's is never looked up. A look that failed (see pendingLook) counts
// as in flight: the open of the temp that follows tells (a temp gone is
// served or rolled forward as settled; one not read is the caller's
// error).
func pendingInFlight(kd *os.File, p *db.Pending) bool {
	in, err := pendingLook(kd, p)
	return in || err != nil
}

// pendingLook is pendingInFlight's look (an lstat) at p's temp, with its
// error: a failure otherwise than "gone" (an I/O error, the kernel out of
// memory) tells neither in flight nor settled. check, which judges the
// promotion without opening its temp when it is settled, reports it so
// (it reported a settled promotion as pending, a problem).
func pendingLook(kd *os.File, p *db.Pending) (bool, error) {
	if !pendingTempName(p) {
		return false, nil
	}
	err := faults.At(faults.PendingLook)
	if err != nil {
		err = &os.PathError{Op: "lstat", Path: fsat.Join(kd, p.Tmp), Err: err}
	} else {
		_, err = fsat.LstatAt(kd, p.Tmp)
	}
	switch {
	case fsat.IsNotExist(err):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}

// pendingTempName reports whether p records a promotion whose temp's
// name is one the store gives its temps, a name in the key dir: a record
// edited to name anything else is never looked at.
func pendingTempName(p *db.Pending) bool {
	return p != nil && strings.HasPrefix(p.Tmp, tmpPrefix) && !strings.ContainsRune(p.Tmp, '/')
}

// PendingTempNotRegular names the file type of p's temp in the key dir kd
// (fsat.Kind: "FIFO", "directory", ...) where it is there and is not a
// regular file, and is "" otherwise (no promotion, a regular temp, one
// gone, a look that failed). Such a temp was put there out of band (no
// crash leaves one), and no roll-forward renames it into place or
// removes it: check says so, and a migration out of meta.db fails the
// key until it is removed by hand.
func PendingTempNotRegular(kd *os.File, p *db.Pending) string {
	if !pendingTempName(p) {
		return ""
	}
	if st, err := fsat.LstatAt(kd, p.Tmp); err == nil && !fsat.IsRegular(&st) {
		return fsat.Kind(&st)
	}
	return ""
}

// PendingInFlight is pendingInFlight for a caller holding the key's lock
// (migrate): kd is the key dir, opened with O_DIRECTORY|O_NOFOLLOW.
func PendingInFlight(kd *os.File, p *db.Pending) bool { return pendingInFlight(kd, p) }
