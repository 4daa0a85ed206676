package fleet

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"sessdb/fleet/etcdmeta"
	"sessdb/fleet/shared"
	"sessdb/internal/callerctx"
	"sessdb/internal/fsat"

	"golang.org/x/sys/unix"
)

// DefaultGrace is ReapOptions.Grace's zero value: how long a file no
// record needs is kept, for resolves still copying it.
const DefaultGrace = time.Hour

// ReapOptions says what Reap removes. The zero value removes no key and
// only files unreferenced for DefaultGrace.
type ReapOptions struct {
	// TTL: a key whose last promotion is older is removed; 0 removes none.
	// The age is told by this host's clock, or by the file server's where
	// that is behind (see fileNow).
	TTL time.Duration
	// Grace: a file no record names is removed once it is this old and,
	// for a generation a newer one superseded, once that newer one is;
	// 0 or less means DefaultGrace. It must exceed the slowest resolve's
	// copy, and the skew between the hosts' clocks (a superseded
	// generation is kept by the date its successor's promoter recorded).
	// Files' ages are told by the file server's clock (see fileNow).
	Grace time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// DryRun reports what would be removed and removes nothing. It
	// writes nothing either, in etcd or the transcripts dir: it takes no
	// key's lock, so it neither waits for a reap or repair holding one
	// nor makes them meet a key locked. A file its runner may not remove
	// (fsat.AccessAt: the key dir's mode, a read-only mount) fails its
	// key, as in a run (ReapResult.Skipped).
	DryRun bool
	// Progress, when set, is called as the walk goes with the number of
	// records judged and the number listed (each key's, and each whose
	// name is no key), as store.ReapOptions' counts names. The files are
	// swept after the keys, so the call saying every record was judged
	// comes only once the sweep is done too: a reap's line never says it
	// is done while it is still removing files.
	Progress func(done, total int)
}

// ReapResult is what a Reap did (or, dry, would do).
type ReapResult struct {
	Removed []string // keys, in key order
	Swept   []string // files no record needed, and empty dirs of keys with none ("<key>/"), as shared names them
	Kept    int      // keys kept, but those in Skipped
	// Gone are the keys another removed between this reap's listing and
	// its delete (another reaper, which took the key's lock first; an
	// operator's etcdctl del), in key order: neither kept nor this reap's
	// removal, as a sessions root's reap skips a key dir another reap
	// removed under it (store.ReapResult.Skipped, not Failed). The files
	// they leave are judged as any key's with no record.
	Gone []string
	// NotKeys are the records whose name is no key
	// (etcdmeta.ErrInvalidKey), in order, as their etcd keys (check's
	// path for them): left alone, as a sessions root's reap leaves a name
	// that is no key, and in none of the above.
	NotKeys []string
	// Skipped are keys left for the next reap, each with why: locked by
	// another reaper, its lock lost, a record that changed under the reap,
	// with a TTL a record that could not be read (ErrDamaged,
	// ErrNewerSchema), a key dir in the transcripts dir that could not be
	// read (its error naming the key dir relative to the transcripts
	// dir), an expired key whose own file's removal would be refused
	// (the key dir's mode, an immutable file, the sticky rule: kept
	// whole, asked before its record is deleted), a file of the key's
	// that no record needs and that could not be removed (the first such
	// error; the key may be in Removed too, its own file left, where the
	// refusal came after the ask). Such a key is not counted in Kept, as a
	// sessions root's reap counts it (store.ReapResult): sessdb reap's
	// summary says failed, not kept.
	Skipped map[string]error
}

// Reap removes expired keys and the files no record needs. Each expired
// key is removed under its lease-backed lock (etcdmeta.Lock), judged again
// from a fresh read, by a delete guarded by the revision judged: a
// promotion landing meanwhile, even after the lock's lease ran out under
// a stalled reaper, makes the delete lose its compare and the key stays.
// A dry run judges each expired key again from a fresh read, with no
// lock.
// The file its record named goes with it. Files are swept after the keys:
// judged from one snapshot of every record, then each key's record is read
// again before its files go, since the snapshot may be long out of date by
// then. A record's own file is never removed, nor any file of a key whose
// record cannot be read.
//
// An error means the walk could not go on (etcd, the transcripts dir:
// one found gone, not a directory or stale once a removal or a key's
// directory failed is shared.ErrDirUnavailable, never every key's files
// taken for gone), or ctx ended it (no key and no file is begun after
// that, and a key whose delete was sent is finished, within the request
// timeout; ctx's error); what was removed before it is in the result.
func (b *Backend) Reap(ctx context.Context, o ReapOptions) (ReapResult, error) {
	if err := b.opened(); err != nil {
		return ReapResult{}, err
	}
	ctx = callerctx.Of(ctx) // nil is context.Background()
	res, err := b.reap(ctx, o)
	return res, callersEnd(ctx, err)
}

func (b *Backend) reap(ctx context.Context, o ReapOptions) (ReapResult, error) {
	var res ReapResult
	// Orphans are judged by this fleet's records: the dir must be its
	// own (a dry run compares, and marks nothing).
	if err := b.claim(ctx, !o.DryRun); err != nil {
		return res, err
	}
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	grace := o.Grace
	if grace <= 0 {
		grace = DefaultGrace
	}
	// The file server's clock is read before any key is judged: a key's
	// TTL is judged by the earlier of it and this host's (keyNow), so that
	// a reaper whose clock jumped ahead (an NTP step, a host booted with
	// its clock years off) does not remove every key of the fleet at once,
	// each "expired" by the clock it alone reads. A dry run reads no
	// server's clock (it writes nothing): its own clock judges all.
	var behind time.Duration
	var unread error
	if !o.DryRun {
		if behind, unread = b.fileBehind(); unread != nil {
			b.log.Warn().Str("dir", b.dir).Err(unread).Msg("session_file_clock_unread")
		}
	}
	keyNow := func() time.Time { return now().Add(-behind) }
	records := map[string]etcdmeta.Item{}
	err := b.meta.List(ctx, func(it etcdmeta.Item) error {
		records[it.Key] = judged(it)
		return nil
	})
	if err != nil {
		return res, err
	}
	keys := slices.Sorted(maps.Keys(records))
	for i, key := range keys {
		if i > 0 && o.Progress != nil {
			o.Progress(i, len(keys))
		}
		if err := ctx.Err(); err != nil {
			// Interrupted: no key is judged after it, a fresh one's
			// mtime (a file server's lstat) no more than an expired
			// one's lock.
			return res, err
		}
		it := records[key]
		if errors.Is(it.Err, etcdmeta.ErrInvalidKey) {
			res.NotKeys = append(res.NotKeys, b.meta.RecordKey(key))
			continue
		}
		if it.Err != nil && o.TTL > 0 {
			// Whether it expired cannot be told: a key reap could not
			// do, as a sessions root's reap counts a key whose meta.db
			// is damaged. Without a TTL no key is judged, and it is
			// kept, as the root's is.
			if res.Skipped == nil {
				res.Skipped = map[string]error{}
			}
			res.Skipped[key] = it.Err
			continue
		}
		if it.Err != nil || !b.expired(key, it.Record, o.TTL, keyNow()) {
			res.Kept++
			continue
		}
		gone, err := b.reapKey(ctx, key, o.TTL, keyNow, o.DryRun)
		var left *fileLeftError
		switch {
		case gone && errors.As(err, &left):
			// Removed, its own file left (would be, for a dry run): the
			// key's failure too, as an orphan it could not remove is.
			res.Removed = append(res.Removed, key)
			if !o.DryRun {
				delete(records, key)
			}
			if res.Skipped == nil {
				res.Skipped = map[string]error{}
			}
			res.Skipped[key] = b.unrooted(left.err)
		case err != nil && ctx.Err() != nil:
			return res, ctx.Err()
		case errors.As(err, new(*keyRefusedError)):
			// Kept whole, record and file: the key's failure, named as
			// the dry run and the run name what they meet.
			if res.Skipped == nil {
				res.Skipped = map[string]error{}
			}
			res.Skipped[key] = b.unrooted(err)
		case errors.Is(err, errRemovedByAnother):
			res.Gone = append(res.Gone, key)
			delete(records, key)
		case errors.Is(err, shared.ErrDirUnavailable):
			// The key's record went by its date; its file could not, nor
			// can any other key's: stop, naming the dir. The file is an
			// orphan for a reap once the dir is back.
			if gone {
				res.Removed = append(res.Removed, key)
			}
			return res, err
		case errors.Is(err, etcdmeta.ErrUnavailable):
			// Every key left would wait out the request timeout in turn
			// (its lock, then the lease's revoke): hours for thousands.
			// The next reap picks them up.
			return res, err
		case err != nil:
			if res.Skipped == nil {
				res.Skipped = map[string]error{}
			}
			res.Skipped[key] = err
		case gone:
			res.Removed = append(res.Removed, key)
			if !o.DryRun {
				// Its file went with it. A dry run keeps the record for
				// the sweep, which then leaves the file to the key's
				// removal, as a real run does.
				delete(records, key)
			}
		default:
			res.Kept++
		}
	}
	// Read again for the files: the walk of the keys may have taken long
	// (a reaper suspended, thousands of keys), and either clock been set
	// meanwhile. A read that fails keeps what the other told: this host's
	// clock alone, a year ahead of the server's, would take a promotion's
	// file just written for a year old. One warning for the run.
	if !o.DryRun {
		if again, err := b.fileBehind(); err == nil {
			behind = again
		} else if unread == nil {
			b.log.Warn().Str("dir", b.dir).Err(err).Msg("session_file_clock_unread")
		}
	}
	fileNow := now().Add(-behind)
	cut := fileNow.Add(-grace)
	inFlight := fileNow.Add(-inFlightAge)
	// Each orphan's mtime as the listing found it, for the judgement
	// again by its record read anew (stillOrphans).
	listed := map[string]time.Time{}
	needed := func(key, name string, mtime time.Time) bool {
		it, ok := records[key]
		if needs(it, ok, name, mtime, cut, inFlight, unreadHistory) {
			return true
		}
		listed[name] = mtime
		return false
	}
	// The temps of the dir's mark a crash left (its first marking cut
	// short) come from the same listing of the dir: no key's, so no
	// record is asked, and they are swept after the keys' orphans.
	listing, err := shared.ListOrphans(ctx, b.dir, needed, cut)
	if err != nil {
		return res, err
	}
	// fail leaves key for the next reap, and reports it, like a key it
	// could not lock; the other keys' files are swept. A key another
	// removed is then this reap's failure, as a kept key's is: counted
	// once.
	fail := func(key string, err error) {
		if res.Skipped == nil {
			res.Skipped = map[string]error{}
		}
		if _, ok := res.Skipped[key]; !ok {
			res.Skipped[key] = b.unrooted(err)
			res.Gone = slices.DeleteFunc(res.Gone, func(k string) bool { return k == key })
			if _, kept := records[key]; kept && !slices.Contains(res.Removed, key) && etcdmeta.ValidKey(key) {
				res.Kept--
			}
		}
	}
	for key, err := range listing.Unreadable {
		fail(key, err)
	}
	names, err := b.stillOrphans(ctx, listing.Orphans, listed, cut, inFlight)
	if err != nil {
		return res, err
	}
	// The mark's temps past the grace period, as check --repair judges
	// them, are swept after the keys' orphans, as a key's temp is; a
	// younger one may be a marking under way, and ListOrphans left it out.
	for _, name := range slices.Concat(names, listing.MarkTemps) {
		if err := ctx.Err(); err != nil {
			// Interrupted: no removal is started after it, as no key is
			// (the orphans left are the next reap's).
			return res, err
		}
		swept, failed, err := b.sweep(name, o.DryRun)
		if err != nil {
			return res, err
		}
		if swept {
			res.Swept = append(res.Swept, name)
		}
		if failed != nil && !shared.IsMarkTemp(name) {
			// A file that could not be removed (its key dir its runner
			// may not write, an I/O error) is its key's failure, as a
			// sessions root's reap fails a key whose stray temp it
			// could not remove: logged alone, every reap went on
			// reporting nothing failed, exit 0, while the file stayed.
			key, _, _ := strings.Cut(name, "/")
			fail(key, failed)
		}
	}
	if len(keys) > 0 && o.Progress != nil {
		o.Progress(len(keys), len(keys))
	}
	return res, nil
}

// sweep removes name, a file no record needs or a temp of the dir's mark
// (shared.IsMarkTemp: no key's), unless this is a dry run, and reports
// whether it was swept: not where another reaper (or check --repair)
// removed it first, which is no fault, nor where the removal failed,
// which is logged, returned as failed, and left for the next reap. The
// error is the transcripts dir's, gone under the reap.
func (b *Backend) sweep(name string, dryRun bool) (swept bool, failed, err error) {
	if dryRun {
		// What the removal meets, asked as the run's would be judged
		// (shared.RemoveErr): a file's key dir to write in, the file
		// one an unlink removes, or for an empty key dir ("<key>/")
		// the transcripts dir. A mark temp's failure is only logged,
		// in a run as in a dry run.
		if !shared.IsMarkTemp(name) {
			failed = shared.RemoveErr(b.dir, name)
		}
		return failed == nil, failed, nil
	}
	if shared.IsMarkTemp(name) {
		err = shared.RemoveMarkTemp(b.dir, name)
	} else {
		key, _, _ := strings.Cut(name, "/")
		b.at(hookSweep, key)
		err = shared.Remove(b.dir, name)
	}
	if err != nil {
		if err := shared.DirErr(b.dir); err != nil {
			return false, nil, err // not swept by another reaper: the dir is gone
		}
	}
	switch {
	case gone(err):
		return false, nil, nil
	case strings.HasSuffix(name, "/") && (errors.Is(err, unix.ENOTEMPTY) || errors.Is(err, unix.EEXIST)):
		// An empty key dir a promotion wrote in since it was listed (the
		// rmdir refuses it): the key is the promotion's, no failure, as a
		// sessions root's empty key dir made into a key meanwhile.
		return false, nil, nil
	case err != nil:
		err = refusal(b.dir, name, err)
		b.log.Warn().Str("file", name).Err(err).Msg("session_sweep_failed")
		return false, err, nil
	}
	return true, nil, nil
}

// refusal is err, the run's failed removal of name (shared.Remove), in
// the words its dry run gives (shared.RemoveErr) where both are a refusal
// (EPERM: an immutable or append-only file or dir, the sticky rule): the
// kernel says only "operation not permitted", and the dry run why. Else
// err as it is.
func refusal(dir, name string, err error) error {
	if !errors.Is(err, unix.EPERM) {
		return err
	}
	if why := shared.RemoveErr(dir, name); why != nil && errors.Is(why, unix.EPERM) {
		return why
	}
	return err
}

// unrooted is err with its message naming what is under the transcripts
// dir as every other message of a reap's and check's does, relative to
// the dir (unroot): a key dir the listing could not read was named by its
// whole path. errors.Is and errors.As see err as it was.
func (b *Backend) unrooted(err error) error {
	return &unrootedError{msg: b.unroot(err.Error()), err: err}
}

type unrootedError struct {
	msg string
	err error
}

func (e *unrootedError) Error() string { return e.msg }
func (e *unrootedError) Unwrap() error { return e.err }

// stillOrphans keeps of names (files a snapshot of the records judged
// orphans, each written at its mtime in listed) those that the record of
// their key, read again now, does not need either. The snapshot may be far
// older than the sweep (a long walk of expired keys, a reaper stalled):
// files promoted since it was taken are then past the in-flight window,
// yet named by their key's record. A key whose record cannot be read keeps
// its files.
func (b *Backend) stillOrphans(ctx context.Context, names []string, listed map[string]time.Time, cut, inFlight time.Time) ([]string, error) {
	var out []string
	var it etcdmeta.Item
	var hist history
	var ok bool
	for _, name := range names {
		key, _, _ := strings.Cut(name, "/")
		if key != it.Key {
			// With its history: the snapshot took every file its
			// record's date alone kept for no record's (unreadHistory).
			st, err := b.readIn(ctx, key, b.meta.Get)
			hist = history{entries: st.History, rev: st.Rev}
			switch {
			case errors.Is(err, etcdmeta.ErrAboveLastSlot):
				// Read whole, its newest entry past the slots a write
				// takes (check names it).
				err = nil
			case err != nil && ctx.Err() == nil && !errors.Is(err, etcdmeta.ErrUnavailable):
				// A history (or record) that does not decode: the
				// record alone, its files judged by its date, as
				// before the history was read.
				st, err = b.readIn(ctx, key, b.meta.GetRecord)
				hist = history{}
			}
			switch {
			case ctx.Err() != nil:
				return nil, ctx.Err()
			case errors.Is(err, etcdmeta.ErrUnavailable):
				return nil, err
			}
			it, ok = etcdmeta.Item{Key: key, Rev: st.Rev, Record: st.Record, Err: err}, st.Rev != 0 || err != nil
		}
		// Judged by its mtime again, not only by the record: the key may
		// have been removed since the snapshot (another reaper, an
		// operator) and taken a first promotion, whose file, of a
		// generation no higher than the snapshot's record, is in flight
		// now that the key has no record, or a lower one.
		if !needs(it, ok, name, listed[name], cut, inFlight, hist) {
			out = append(out, name)
		}
	}
	return out, nil
}

// judged is a listed item as a walk that judges files keeps it for the
// whole walk (check, reap): what names and dates the key's files (its
// record's transcript and the generation its history reaches), its
// revision and its error; not the record's other fields, which another
// binary or a hand may have made as large as etcd takes (1.5 MiB by
// default), and which every listed key would otherwise hold till the
// walk ends.
func judged(it etcdmeta.Item) etcdmeta.Item {
	it.Record = etcdmeta.Record{Transcript: it.Record.Transcript, HistoryGen: it.Record.HistoryGen}
	return it
}

// needs reports whether a key whose record is it (ok: it has one) needs
// its file name, written at mtime, kept, where cut is the grace period's
// start and inFlight the in-flight window's (inFlightAge): every file of a
// key whose record cannot be read; a temp, or a file of a generation
// above the record's (or of a key with no record), written within the
// in-flight window, whatever the grace period, since its promotion may
// still commit it; the record's own file; a file of a generation below
// the record's superseded less than the grace period ago, by the key's
// history (superseded: a resolve that read a record before may still be
// copying it); a file of a generation above the record's that a record
// named less than the grace period ago at the latest, by the key's
// history (unnamedSince: an earlier incarnation's, the key's record
// removed alone and the key promoted anew, which a resolve of that
// incarnation may still be copying); any other file of a key whose
// newest generation landed less than the grace period ago; and the
// empty directory ("<key>/") of
// a key with a record, or made within the in-flight window.
//
// hist is the key's history as read with it. The listing's snapshot
// reads none (unreadHistory): a file below the record's generation that
// only a date keeps is not needed there, and is judged again, with the
// key's history, before it is removed or reported (stillOrphans, check's
// look at the key, the repair); so is a file above the record's
// generation. Judged by the record's date alone, as
// before, a generation superseded days ago was kept for as long as the
// key took a promotion within every grace period: a busy key's files
// were never swept.
//
// A file of a generation at or below the record's that the record does
// not name can never be named while the key keeps a record: a commit names
// the generation above its base's, guarded by the base's revision, and
// the record's generation only grows. Save at the last generation, where
// it stops growing, and once the record is removed: a key removed (an
// expired one, an operator's etcdctl del) and promoted anew starts again
// from no record, so each file is judged again, with its mtime, by the
// record as read just before its removal (stillOrphans, the repair).
func needs(it etcdmeta.Item, ok bool, name string, mtime, cut, inFlight time.Time, hist history) bool {
	if ok && it.Err != nil {
		return true // unreadable: nothing of it is judged
	}
	if strings.HasSuffix(name, "/") {
		// The key's directory, empty: a key's first promotion may have
		// just made it.
		return ok || mtime.After(inFlight)
	}
	var t *etcdmeta.Transcript
	if ok {
		t = it.Record.Transcript
	}
	_, gen, isFile := shared.ParseName(name)
	// At the last generation the count saturates (a record another
	// binary or a hand wrote there): a promotion numbers its file as its
	// base's, so a file of that generation may be in flight too.
	if (!isFile || t == nil || gen > t.Gen || gen == math.MaxUint64) && mtime.After(inFlight) {
		return true
	}
	switch {
	case !ok:
		return false // no record: an orphan, or a reaped key's
	case !isFile:
		return false // a temp past the in-flight window: a write that died
	}
	switch {
	case t == nil || t.File == name:
		return true
	case gen != t.Gen && hist.unread:
		return false // judged again with the history
	case gen < t.Gen && hist.rev == it.Rev:
		at, _ := superseded(hist.entries, gen, t)
		return at.After(cut)
	case gen > t.Gen && hist.rev == it.Rev:
		at, _, _ := unnamedSince(hist.entries, t)
		return at.After(cut)
	}
	return time.Unix(0, t.PromotedAt).After(cut)
}

// history is a key's history as read with its record at rev (a record
// read again since is judged by its date alone), or unread.
type history struct {
	entries []etcdmeta.HistoryEntry
	rev     etcdmeta.Rev
	unread  bool
}

// unreadHistory is the history of a listing's snapshot, which reads none.
var unreadHistory = history{unread: true}

// superseded is when a file of generation gen, below that of t, its
// key's record's transcript, was superseded at the latest: the earliest
// date among the key's history entries of a generation above gen and no
// higher than t's, and t's own date. An entry is taken only where the
// record held its generation when it was written: a fleet's promotion
// writes its entry with the record, and a refusal names the record's
// generation. So the entries are read newest first, and the walk stops
// at the first of a generation at or below gen (the key held gen, or
// less, then: anything older is from before gen's successor landed, or
// of another incarnation of the key, one whose record was deleted with
// its history left), and after the promotion whose ticket was resolved
// from gen or below (BaseGen: the record it committed over), which is
// gen's successor: older entries above gen are a history the key was
// moved in with (Record.HistoryGen), naming generations its record never
// held. An entry trimmed from the bounded history only makes the date
// later, and the file kept longer. Entries of generations above t's are
// not taken either. dated reports whether an entry gave the date: where
// none did, it is t's own.
func superseded(hist []etcdmeta.HistoryEntry, gen uint64, t *etcdmeta.Transcript) (at time.Time, dated bool) {
	ns := t.PromotedAt
	for i := len(hist) - 1; i >= 0; i-- {
		e := hist[i]
		if e.Gen <= gen {
			break
		}
		if e.Gen <= t.Gen && e.At <= ns {
			ns, dated = e.At, true
		}
		if e.Outcome == "" && e.BaseGen != 0 && e.BaseGen <= gen {
			break
		}
	}
	return time.Unix(0, ns), dated
}

// unnamedSince is the date from which no record has named a file of a
// generation above that of t, its key's record's transcript, at the
// latest: the earliest date among the key's history entries, read newest
// first, down to the first of a generation above t's, and t's own date
// (dated: an entry gave it). A record's generation only grows, so no
// record of the key since its newest entry above t's generation named
// such a file: it is a promotion's that lost its commit or died before
// it, which no record ever named, or a generation of an earlier
// incarnation of the key, one whose record was removed (etcdctl del)
// before the key was promoted anew from no record, which the resolves of
// that incarnation read before that removal, so before every entry of
// the incarnation since. reached is that entry's generation (0: no entry
// above t's was read, the earlier incarnation's history gone with its
// record, trimmed from the bounded history, or never there): a
// generation the earlier incarnation reached at least. An entry trimmed
// only makes the date later, and a history moved in with the key
// (Record.HistoryGen) that names generations above t's stops the walk at
// once, at t's date.
func unnamedSince(hist []etcdmeta.HistoryEntry, t *etcdmeta.Transcript) (at time.Time, dated bool, reached uint64) {
	ns := t.PromotedAt
	for i := len(hist) - 1; i >= 0; i-- {
		e := hist[i]
		if e.Gen > t.Gen {
			reached = e.Gen
			break
		}
		if e.At <= ns {
			ns, dated = e.At, true
		}
	}
	return time.Unix(0, ns), dated, reached
}

// inFlightAge is how long a temp, or a file of a generation above its
// key's record, is kept whatever the grace period: a promotion writes its
// file before the commit that names it, and that commit, retried, is sent
// no later than etcdmeta.MaxRequestTimeout after the write began
// (txn.Commit), whatever the promoter's own timeout. Three of those and a
// minute leave room for a member that applies a write late, and for the
// skew between hosts where files are stamped by their writers' clocks (a
// file server's own clock is read: fileNow).
const inFlightAge = time.Minute + 3*etcdmeta.MaxRequestTimeout

// fileNow is now as the transcripts dir's file server tells the time: set
// back by as much as that server's clock is behind this host's (read with
// shared.ServerNow), and as it is when the server's is ahead or cannot be
// read. The files' ages are told by that server's clock (their mtimes), so
// a reaper ahead of it by more than the in-flight window would otherwise
// take a file just written, whose commit is still to come, for an orphan:
// the promotion then lands naming a file that is gone. A server ahead
// only makes files look younger, and they are kept longer. A dry run and
// a check without --repair write nothing, not even the dir's time: they
// judge by this host's clock.
func (b *Backend) fileNow(now time.Time) time.Time {
	behind, err := b.fileBehind()
	if err != nil {
		b.log.Warn().Str("dir", b.dir).Err(err).Msg("session_file_clock_unread")
	}
	return now.Add(-behind)
}

// fileBehind is how far the file server's clock is behind this host's,
// as fileNow reads it: 0 when it is not behind, or cannot be read (the
// error).
func (b *Backend) fileBehind() (time.Duration, error) {
	read, localNow := b.serverNow, b.localNow
	if read == nil {
		read = shared.ServerNow
	}
	if localNow == nil {
		localNow = time.Now
	}
	server, err := read(b.dir)
	if err != nil {
		return 0, err
	}
	// This host's clock is read after the server stamped its time, never
	// before: a reaper paused between the two (a VM suspended, a stalled
	// touch) then finds the server further behind than it is, and judges
	// files younger, kept longer. Read before, the pause was taken off the
	// server's lag, and the files judged by a clock the pause ahead of the
	// one that stamped them: a promotion's file in flight swept.
	local := localNow()
	// A local disk stamps by the kernel's coarse clock, a tick behind the
	// one time.Now reads: no server behind, and no reason to shift every
	// age by a few milliseconds.
	if behind := local.Sub(server); behind > time.Second {
		return behind, nil
	}
	return 0, nil
}

// expired reports whether key's record r is past the TTL at now, by its
// lastPromotion. The mtime of its file is read only for a record its own
// date does not expire: lastPromotion is never later than that date.
func (b *Backend) expired(key string, r etcdmeta.Record, ttl time.Duration, now time.Time) bool {
	t := r.Transcript
	if ttl <= 0 || t == nil {
		return false
	}
	if now.Sub(time.Unix(0, t.PromotedAt)) > ttl {
		return true
	}
	var mtime time.Time
	known := false
	if namesOwnFile(key, t) {
		// A regular file's only: a resolve judges no other by its mtime.
		if st, ok := lstatName(b.dir, t.File); ok && fsat.IsRegular(&st) {
			mtime, known = fsat.ModTime(&st), true
		}
	}
	return now.Sub(lastPromotion(t, mtime, known)) > ttl
}

// lastPromotion is when the promotion of t, whose file was written at
// mtime (where known: a regular file's), is taken to have landed: its
// PromotedAt, the
// promoter's clock, unless that is later than the file's mtime by more
// than a commit can follow its write (inFlightAge: the commit window and
// the skew between a worker's clock and the file server's). Such a date
// is a clock that is wrong (a worker's ahead, a value written by hand),
// and taken as it is it would keep the key from expiring until long
// after its file was written, a year on for a clock a year ahead; the
// mtime, the file server's clock, is taken instead. The rule reads no
// clock of the judge's: judged by whether the date is in the future, a
// key expired by its mtime came back once its date had passed, and a
// reaper and a resolve whose clocks stood either side of that date
// disagreed by far more than their skew. A date earlier than the mtime
// is taken as it is, so a file server whose clock is behind ages no key
// while it is behind by less than inFlightAge; behind by more, every key
// is judged by its mtime and expires that much early. Whether the mtime
// is known is said apart from it: a file system that keeps any time
// (tmpfs) can date a file at Go's zero time, the first instant of year 1,
// which taken for "unknown" left that one file's key unexpired.
func lastPromotion(t *etcdmeta.Transcript, mtime time.Time, known bool) time.Time {
	at := time.Unix(0, t.PromotedAt)
	if known && at.Sub(mtime) > inFlightAge {
		return mtime
	}
	return at
}

// errRemovedByAnother is reapKey's answer for a key that has no record
// left for it to delete: another removed it since the listing
// (ReapResult.Gone).
var errRemovedByAnother = errors.New("removed by another since this reap listed it")

// reapKey removes key if it is still expired under its lock, and reports
// whether it did; errRemovedByAnother if another did. A dry run judges
// the key again from a fresh read too, but takes no lock: the lock is a
// lease and a key written in etcd, which a dry run must not write (it
// failed every expired key under the NOSPACE alarm), and held, it made a
// real reap or repair beside the dry run fail the key as locked, or the
// dry run wait for theirs. Nothing it does needs excluding.
func (b *Backend) reapKey(ctx context.Context, key string, ttl time.Duration, now func() time.Time, dry bool) (bool, error) {
	var lost <-chan struct{} // a dry run returns before it looks
	if !dry {
		unlock, l, err := b.lock(ctx, key)
		if err != nil {
			return false, err
		}
		defer unlock()
		lost = l
	}
	st, err := b.readIn(ctx, key, b.meta.Get)
	if err == nil && st.Rev == 0 {
		return false, fmt.Errorf("reap %s: %w", key, errRemovedByAnother)
	}
	if err != nil || !b.expired(key, st.Record, ttl, now()) {
		return false, err
	}
	// The key's own file goes with its record: what its unlink would
	// meet (a key dir its runner may not write, a directory at the
	// file's name, an immutable or append-only file or dir, another
	// user's file in a sticky key dir) is asked before the record is
	// deleted, dry run and run alike, and refuses the key whole, as a
	// sessions root's reap refuses a key (fsat.DeleteErr). Deleted first,
	// the record was gone and the file an orphan no reap could remove,
	// failing every reap until the refusal was cleared. A file gone is
	// none of its failure. A refusal that comes between this ask and the
	// unlink (a chattr +i, a chmod during the delete) still leaves the
	// file an orphan, the key removed and failed for it (fileLeftError);
	// the key was expired, so no conversation a job resumes is lost.
	if t := st.Record.Transcript; t != nil && namesOwnFile(key, t) {
		switch err := shared.RemoveErr(b.dir, t.File); {
		case err == nil:
		case refusedRemoval(err):
			if derr := shared.DirErr(b.dir); derr != nil {
				return false, derr
			}
			return false, &keyRefusedError{err}
		case dry:
			// Anything else (no directory at the key's name: no file of
			// the key's there to leave) the run meets after the delete,
			// and fails the key for, removed.
			return true, &fileLeftError{err}
		}
	}
	if dry {
		return true, nil
	}
	if err := b.at(hookReapDelete, key); err != nil {
		return false, err
	}
	select {
	case <-lost:
		// The lease ended (a stalled reaper): another may hold the lock.
		// The guarded delete below would still be safe; leaving the key
		// to whoever holds the lock now is simpler to reason about.
		return false, fmt.Errorf("reap %s: %w", key, ErrLockLost)
	default:
	}
	if err := ctx.Err(); err != nil {
		return false, err // interrupted before the delete: nothing sent
	}
	// Once sent, the delete is finished whatever ctx does (Ctrl-C), within
	// the request timeout: cut short, its answer was dropped though etcd
	// may have served it, and the key went unreported, its file left.
	if gone, err := b.delete(callerctx.WithoutCancel(ctx), key, st.Rev); !gone {
		return false, err
	}
	// The file goes with the key only if it is the key's own: a name is
	// foreign input, and a record another tenant or binary wrote may name
	// another key's transcript, which its own record still needs. A name
	// that is not the key's is left to the sweep, which judges it by its
	// own key's record.
	if t := st.Record.Transcript; t != nil && namesOwnFile(key, t) {
		if err := shared.Remove(b.dir, t.File); err != nil {
			if err := shared.DirErr(b.dir); err != nil {
				return true, err
			}
			err = refusal(b.dir, t.File, err)
			b.log.Warn().Str("key", key).Str("file", t.File).Err(err).Msg("session_sweep_failed")
			if !gone(err) {
				return true, &fileLeftError{err}
			}
		}
	}
	return true, nil
}

// refusedRemoval reports whether err, what shared.RemoveErr says an
// unlink of a key's file would meet, is a refusal that leaves the file
// where it is: the mode or an ACL (EACCES), a read-only mount (EROFS), an
// immutable or append-only entry or the sticky rule (EPERM), a directory
// at the file's name (EISDIR). Not a key dir that is no directory, which
// holds no file of the key's to leave.
func refusedRemoval(err error) bool {
	for _, e := range []error{unix.EACCES, unix.EROFS, unix.EPERM, unix.EISDIR} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// keyRefusedError is reapKey's answer for an expired key whose own file
// its removal would be refused (shared.RemoveErr): the key is kept whole,
// record and file, and failed, for the next reap once the refusal is
// cleared.
type keyRefusedError struct{ err error }

func (e *keyRefusedError) Error() string { return e.err.Error() }
func (e *keyRefusedError) Unwrap() error { return e.err }

// fileLeftError is reapKey's answer for a key whose record it removed
// (with DryRun: would remove) and whose own file it could not (would not
// be let): the key is removed, and failed for its file, which the next
// reap sweeps as an orphan.
type fileLeftError struct{ err error }

func (e *fileLeftError) Error() string { return e.err.Error() }
func (e *fileLeftError) Unwrap() error { return e.err }

// delete removes key's record at rev, guarded by it, again after a
// backoff while etcd is unavailable, within the request timeout and ctx,
// and reports whether the record is gone. A lost compare after a try
// whose answer was lost, with no record left, is that try landed (or
// another reaper's delete, after this one's lock ended: the key is gone
// either way), as is one etcd's client sent again itself (Resent: an
// answer that was a context error's); with no try unsure, it is
// another's removal (errRemovedByAnother); with a record, it is a
// promotion that landed meanwhile, and the key is not expired any more. Without the retry, a leader change
// overtaking the delete stopped the reap, and a delete that had landed
// was never reported.
//
// Each try is hedged (b.hedge), as a commit is: sent to a member that
// answers nothing, it cost the whole timeout and stopped the walk. A
// delete sent again is safe because it is guarded by rev, the record's
// mod revision: once one try removed the record no other can (etcd never
// gives a revision twice, and a record written anew has a newer one), so
// at most one lands, whichever member each reached. A second try makes
// the delete unsure before it is sent, as a lost answer does, so that
// the conflict of a try that found the record gone is the other landed.
func (b *Backend) delete(ctx context.Context, key string, rev etcdmeta.Rev) (bool, error) {
	c, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	unsure := false
	for try := 0; ; try++ {
		err := b.hedge(ctx, func(c context.Context) error {
			_, err := b.meta.Delete(c, key, rev)
			return err
		}, func() { unsure = true }, nil)
		var ce *etcdmeta.ConflictError
		switch {
		case err == nil:
			return true, nil
		case errors.As(err, &ce) && ce.Current.Rev == 0 && !unsure && !ce.Resent:
			return false, fmt.Errorf("reap %s: %w", key, errRemovedByAnother)
		case errors.As(err, &ce):
			return ce.Current.Rev == 0, nil
		case !errors.Is(err, etcdmeta.ErrUnavailable) || !etcdmeta.Backoff(c, try):
			if unsure || etcdmeta.Unanswered(err) {
				// The walk reports no removal for this key, and a fleet
				// logs none: the error is all the operator hears of it.
				// A try unanswered is unsure too, the last as much as any
				// before it: a link that went silent (or slow) as it was
				// sent may deliver it yet; so is one the TLS probe then
				// found refused.
				err = fmt.Errorf("%w (a try's answer was lost: the key may be removed already; reap again to know)", err)
			}
			return false, err
		}
		unsure = true
	}
}
