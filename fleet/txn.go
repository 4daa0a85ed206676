package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"sessdb/db"
	"sessdb/fleet/etcdmeta"
	"sessdb/fleet/shared"
	"sessdb/gates"
	"sessdb/internal/callerctx"
	"sessdb/internal/faults"
	"sessdb/store"
)

// Begin opens key for a promotion whose ticket's base is base. Nothing is
// locked: the commit is guarded by the record's revision.
//
// A base that the nearest member shows in place (a serializable read of
// the record, without a round through the leader) and that this Backend
// has not seen superseded is taken for what the key holds (optimistic),
// and no history is read; the commit's compare tells whether the key
// moved on meanwhile, and then (ErrConflict) the store begins again and
// this Backend reads the key, record and history, linearizably. A
// promotion that finds its base in place costs one local read and one
// guarded transaction.
//
// A key whose directory in the transcripts dir is a link or not a
// directory is store.ErrKeyDirNotADirectory; a record that does not decode,
// is of a newer schema or names no file of its key's generation (which a
// resolve calls meta-unreadable) is an error (never written over), as is
// etcd not answering.
func (b *Backend) Begin(key string, base store.Base) (store.KeyTxn, error) {
	return b.BeginContext(context.Background(), key, base)
}

// BeginContext is Begin, its etcd requests ended once ctx is done (each
// still within the request timeout), with an error that wraps ctx's
// (store.ContextBackend). The txn it returns keeps ctx for its Refuse: the
// record of a refusal, its reads and its appends, is given up once ctx is
// done, as Begin's reads are (an append already sent may still land: the
// retry finds it, and records the refusal once). Its Commit never
// consults ctx: it is bounded by the request timeout alone.
func (b *Backend) BeginContext(caller context.Context, key string, base store.Base) (store.KeyTxn, error) {
	// nil is context.Background(); a ctx of the caller's own type that
	// breaks the contract is held to it (callerctx), before
	// context.WithTimeout would panic on it.
	caller = callerctx.Of(caller)
	if err := b.opened(); err != nil {
		return nil, err
	}
	if !etcdmeta.ValidKey(key) {
		return nil, fmt.Errorf("begin %q: %w", key, store.ErrInvalidKey)
	}
	if fi, err := os.Lstat(filepath.Join(b.dir, key)); err == nil && !fi.IsDir() {
		return nil, store.ErrKeyDirNotADirectory
	}
	// One request timeout for both reads: an etcd that does not answer
	// the first will not answer the second either.
	ctx, cancel := context.WithTimeout(caller, b.timeout)
	defer cancel()
	// The file goes into the dir for this fleet's records to name, and
	// another fleet's reap would sweep it (once a Backend, see Claim).
	if err := b.claim(ctx, true); err != nil {
		return nil, err
	}
	t := b.optimistic(ctx, key, base)
	if t == nil {
		st, err := readWithin(ctx, key, b.meta.Get)
		if err != nil {
			return nil, err
		}
		t = &txn{b: b, key: key, st: st}
	}
	if tr := t.st.Record.Transcript; tr != nil && !namesOwnFile(key, tr) {
		// A record that decodes but names no file of its key's
		// generation is the damage a resolve calls meta-unreadable:
		// never written over, as one that does not decode is not. Its
		// generation may be 0, which the job contract takes for a key
		// with no transcript: a cold run's promotion replaced it, and
		// the conversation its file holds went with the next reap.
		return nil, fmt.Errorf("begin %s: %w: %s (resolve: meta-unreadable)", key, etcdmeta.ErrDamaged, recordFault(key, tr))
	}
	t.caller = caller
	if err := b.at(hookStage, key); err != nil {
		return nil, err
	}
	return t, nil
}

// optimistic returns the txn of a promotion that takes base for the key's
// state, or nil where it cannot: a base already seen superseded, a base
// that names a record but no revision (not a fleet's), a key the nearest
// member shows moved on from base (a job superseded writes no file), a
// member behind base, or a key moved in whose history names a generation
// above its record's (Record.HistoryGen).
func (b *Backend) optimistic(ctx context.Context, key string, base store.Base) *txn {
	if b.stale.has(key, base.Rev) || base.Rev == 0 && base != (store.Base{}) {
		return nil
	}
	st, err := b.meta.PeekRecord(ctx, key)
	if err != nil || baseOf(st.Record, st.Rev) != base || st.Record.HistoryGen != 0 {
		// HistoryGen: a key moved in with a history that names a
		// generation above the record's; the next one is numbered from
		// the history, which only a full read has.
		return nil
	}
	return &txn{b: b, key: key, st: st, optimistic: true}
}

// txn is one key as a promotion sees it: the state read by Begin, and the
// file Stage wrote.
type txn struct {
	b   *Backend
	key string
	st  etcdmeta.State
	// caller is the promote's context, for Refuse alone (see
	// BeginContext): Commit never consults it.
	caller context.Context
	// optimistic: st is the ticket's base, unread from the leader, with
	// no history (see Begin).
	optimistic bool
	// staged is the file Stage wrote; Close removes it unless it was
	// committed, or a commit's answer was lost (unsure): then it may be
	// the key's generation, and only reap, which reads the record, may
	// remove it.
	staged    string
	committed bool
	unsure    bool
	// writing is when Stage began to write: Commit sends nothing later
	// than etcdmeta.MaxRequestTimeout after it (inFlightAge). wrote is the
	// same instant by the wall clock alone, which a reaper judges the
	// file's age by.
	writing, wrote time.Time
}

// State is the key as Begin found it. An optimistic state has no history:
// the ticket cannot have promoted while the record is still at its base
// (its promotion would have moved it on), and no promotion gen can be
// higher than the record's (record and history are one transaction; a
// record moved in with a higher one is never taken optimistically).
func (t *txn) State() (db.Sidecars, []db.HistoryEntry, store.Base) {
	return sidecarsOf(t.st.Record), historyOf(t.st.History), baseOf(t.st.Record, t.st.Rev)
}

// HoldsRecord reads the file the record names against the record's size
// and CRC32C. Files are written once, so only a file lost or damaged
// since its promotion (by a disk, or by hand) fails it; a name that is
// not the key's own generation's is never opened.
func (t *txn) HoldsRecord() (bool, error) {
	return t.HoldsRecordContext(context.Background())
}

// HoldsRecordContext is HoldsRecord, its read of the file stopped once
// ctx is done (looked at before each megabyte), with ctx's error
// (store.ContextKeyTxn). A read in flight on a shared dir that hangs is
// not ended by it.
func (t *txn) HoldsRecordContext(ctx context.Context) (bool, error) {
	ctx = callerctx.Of(ctx)
	rt := t.st.Record.Transcript
	if rt == nil || !namesOwnFile(t.key, rt) {
		return false, nil
	}
	if err := faults.At(faults.HoldsRecordRead); err != nil {
		return false, err
	}
	f, err := shared.Open(t.b.dir, rt.File)
	switch {
	case gone(err), errors.Is(err, shared.ErrNotRegular):
		return false, nil
	case err != nil:
		return false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Size() != rt.Size {
		return false, err
	}
	n, sum, err := store.ReadCRC32C(ctx, f, rt.Size+1)
	if err == nil {
		// A read ctx stopped does not match, and says nothing.
		err = ctx.Err()
	}
	return err == nil && n == rt.Size && uint64(sum) == rt.CRC32C, err
}

// conflict marks the state Begin took as superseded, so that the store's
// next Begin for the key reads it, and returns store.ErrConflict.
func (t *txn) conflict(err error) error {
	t.b.stale.mark(t.key, int64(t.st.Rev))
	if err == nil {
		return fmt.Errorf("%s: %w", t.key, store.ErrConflict)
	}
	return fmt.Errorf("%w: %w", store.ErrConflict, err)
}

// Refuse appends e to the history, guarded by the revision Begin read, so
// that the refusal is true of the record it follows. An append whose
// answer was lost is looked for in the history before it is tried again:
// a refusal is recorded once.
//
// A record that changed meanwhile is store.ErrConflict, for the store to
// decide again, except for a superseded ticket: a key that moved on once
// more supersedes it all the more, so the refusal is recorded at the
// newer record (its generation in Gen) instead. Without that, jobs on a
// busy key would report a refusal that lost a race as promote-failed.
//
// Its reads and appends end once the caller's context (BeginContext's) is
// done, with an error that wraps its, each within the request timeout.
func (t *txn) Refuse(e db.HistoryEntry) error {
	if t.optimistic {
		// The refusal was decided on the ticket's base, unread: read the
		// key, to decide again if it moved on, and to record a refusal
		// once.
		st, err := t.b.readIn(t.caller, t.key, t.b.meta.Get)
		switch {
		case err != nil:
			return err
		case st.Rev != t.st.Rev:
			return t.conflict(nil)
		case store.RefusalRecorded(historyOf(st.History), e.Ticket, e.Outcome):
			return nil
		}
		t.st, t.optimistic = st, false
	}
	if t.st.Rev == 0 {
		return nil // a key with no record keeps no history
	}
	if err := t.b.at(hookRefuse, t.key); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(t.caller, t.b.timeout)
	defer cancel()
	base := t.st.Rev
	for try := 0; ; try++ {
		// The tries outlive the loop's turn: each takes copies. (Named
		// apart from base, which the turn re-bases for the next one.)
		key, at, h := t.key, base, entryOf(e)
		err := t.b.hedge(ctx, func(c context.Context) error {
			_, err := t.b.meta.AppendHistory(c, key, at, h)
			return err
		}, nil, nil)
		var ce *etcdmeta.ConflictError
		switch {
		case err == nil:
			return nil
		case errors.As(err, &ce) && etcdmeta.Holds(ce.Current.History, entryOf(e)):
			// A try landed before the record moved on, its answer
			// late: the refusal is recorded, at the record it was
			// decided on.
			return nil
		case errors.As(err, &ce) && e.Outcome == string(gates.Superseded) && ce.Current.Rev != 0 && ce.Current.Record.Transcript != nil:
			base, e.Gen = ce.Current.Rev, ce.Current.Record.Transcript.Gen
			continue
		case errors.Is(err, etcdmeta.ErrConflict):
			return t.conflict(err)
		case !errors.Is(err, etcdmeta.ErrUnavailable) || !etcdmeta.Backoff(ctx, try):
			return err
		}
		st, gerr := t.b.meta.Get(ctx, t.key)
		switch {
		case gerr != nil:
			continue
		case etcdmeta.Holds(st.History, entryOf(e)):
			return nil
		case st.Rev != base && e.Outcome == string(gates.Superseded) && st.Record.Transcript != nil:
			base, e.Gen = st.Rev, st.Record.Transcript.Gen
		case st.Rev != base:
			return t.conflict(nil)
		}
	}
}

// Stage writes the run's transcript as a new write-once file for
// generation gen (shared.Write: temp, fsync, no-replace rename, directory
// fsync), with the newline a torn tail lacks.
func (t *txn) Stage(gen uint64, src io.ReaderAt, size int64, torn bool) (store.Staged, error) {
	var r io.Reader = io.NewSectionReader(src, 0, size)
	want := size
	if torn {
		r, want = io.MultiReader(r, strings.NewReader("\n")), size+1
	}
	t.writing, t.wrote = time.Now(), t.b.now().Round(0)
	name, n, sum, err := shared.Write(context.Background(), t.b.dir, t.key, gen, r)
	if err != nil {
		return store.Staged{}, err
	}
	t.staged = name
	if n != want {
		return store.Staged{}, fmt.Errorf("stage %s: the staged file shrank from %d to %d bytes", name, want, n)
	}
	return store.Staged{Name: name, Size: n, CRC32C: sum}, nil
}

// Commit puts the record naming the staged file, and e, in one
// transaction guarded by the revision Begin read. A lost compare is
// store.ErrConflict, and the file is removed. A try whose answer is lost
// is tried again on the same base until the request timeout: a conflict
// whose record names this file, or whose history holds e, is this
// commit, landed by an earlier try (see landed), even the first conflict
// of a commit none of whose tries went unanswered here (etcd's client
// sent one again itself).
func (t *txn) Commit(st store.Staged, rec db.Sidecars, e db.HistoryEntry) error {
	if err := t.b.at(hookCommit, t.key); err != nil {
		return err
	}
	r, h := recordOf(rec, st.Name), entryOf(e)
	ctx, cancel := t.b.deadline()
	defer cancel()
	// A promoter that stalled since its write (a frozen host) may find its
	// file swept: it must not then commit a record naming it.
	ctx, cancelLate := context.WithDeadline(ctx, t.writing.Add(commitWindow))
	defer cancelLate()
	for try := 0; ; try++ {
		if err := t.late(); err != nil {
			return err
		}
		err := t.put(ctx, r, h)
		var ce *etcdmeta.ConflictError
		switch {
		case err == nil:
		case errors.As(err, &ce):
			// Looked for whether or not a try of this commit's own went
			// unanswered: etcd's client sends a try again by itself when
			// its answer is a context error (Canceled, DeadlineExceeded:
			// a hop between here and the member) while ctx lives, and only
			// the second try's conflict comes back. The file's name, with
			// its random part, and the entry are this commit's alone.
			if landed(ce.Current, st.Name, h) {
				t.b.landedLate.Add(1)
				break // an earlier try landed
			}
			if !t.unsure {
				t.remove()
			}
			return t.conflict(err)
		case errors.Is(err, etcdmeta.ErrUnavailable) && etcdmeta.Backoff(ctx, try):
			t.unsure = true
			continue
		default:
			// After a try gone unanswered (etcd's silence, or a refusal
			// of the credentials the TLS probe found after it) the
			// commit may have landed, and its file is then the key's
			// generation (Close keeps it).
			if etcdmeta.Unanswered(err) {
				t.unsure = true
			}
			return err
		}
		t.committed = true
		return t.b.at(hookAfterCommit, t.key)
	}
}

// late is the error of a commit not sent because its file was written
// longer ago than commitWindow by the wall clock. The commit's deadline
// runs on the monotonic clock, which a host suspended (a VM paused, a
// machine asleep) does not advance: the wall clock may be far past the
// window, and the file swept by a reaper meanwhile.
func (t *txn) late() error {
	if late := t.b.now().Round(0).Sub(t.wrote); late > commitWindow {
		return fmt.Errorf("commit %s: not sent: its file was written %v ago by the wall clock (a host suspended?), past the %v a reaper waits for a commit", t.key, late.Round(time.Second), commitWindow)
	}
	return nil
}

// landed reports whether cur, the state a commit's try lost its compare
// to, holds the commit itself, landed by another try: its record names
// the file, or, once another promotion was built on it, its history
// holds the entry (a hedged try's answer can come after the other job's
// commit). Such a promotion is the job's: reported as not promoted, the
// job would run again what the key already holds.
func landed(cur etcdmeta.State, file string, h etcdmeta.HistoryEntry) bool {
	tr := cur.Record.Transcript
	return tr != nil && tr.File == file || etcdmeta.Holds(cur.History, h)
}

// put sends the commit, hedged: every try is the same write guarded by
// the same base, so at most one lands. A second try makes the commit
// unsure before it is sent, so that a conflict that holds this commit
// (landed) is taken for the first landed, and the file is kept on any
// other (a try still in flight could not land then: the base is gone for
// good, but the file is reap's to judge, as after any lost answer).
// A try sent again looks at the wall clock first (t.late), as Commit
// does before each round.
func (t *txn) put(ctx context.Context, r etcdmeta.Record, h etcdmeta.HistoryEntry) error {
	key, base := t.key, t.st.Rev // the tries outlive put, t does not stay still
	return t.b.hedge(ctx, func(c context.Context) error {
		_, err := t.b.meta.Put(c, key, base, r, h)
		return err
	}, func() { t.unsure = true }, t.late)
}

// hedge runs write, a guarded write that lands once at most however many
// times it is sent (a commit: its base is gone once it lands; a history
// append: a try that finds its entry in place is that entry, see
// etcdmeta.AppendHistory), hedged as etcdmeta.Hedge sends it: a member
// that answers nothing would otherwise cost every write sent to it the
// whole timeout, promote-failed though the others answer at once. again,
// if not nil, runs before a try is sent again. The first success or
// conflict is the answer; an error, once no try is left in flight.
//
// late, if not nil, is asked before a try is sent again, and its error
// is that try's: a try sent again goes out from the hedge's timer, which a
// host suspended while the first try went unanswered does not advance,
// so it would otherwise be sent on resuming, past the window in which a
// reaper keeps the file the write names.
func (b *Backend) hedge(ctx context.Context, write func(context.Context) error, again func(), late func() error) error {
	var resent atomic.Bool
	_, err := etcdmeta.Hedge(b.meta, ctx, func(c context.Context) (struct{}, error) {
		if late != nil && resent.Load() {
			if err := late(); err != nil {
				return struct{}{}, err
			}
		}
		return struct{}{}, write(c)
	}, func(err error) bool {
		var ce *etcdmeta.ConflictError
		return errors.As(err, &ce)
	}, func() {
		resent.Store(true)
		if again != nil {
			again()
		}
	})
	return err
}

// commitWindow is how long after its file's write began a commit may be
// sent; a variable so that a test can stand in for a stalled promoter.
var commitWindow = etcdmeta.MaxRequestTimeout

// remove removes the staged file, which no record names.
func (t *txn) remove() {
	if t.staged == "" {
		return
	}
	if err := shared.Remove(t.b.dir, t.staged); err != nil {
		t.b.log.Warn().Str("key", t.key).Str("file", t.staged).Err(err).Msg("session_orphan_left")
	}
	t.staged = ""
}

// Close removes a staged file that was never committed, unless a
// commit's answer was lost (then it may have landed: reap decides).
func (t *txn) Close() error {
	if !t.committed && !t.unsure {
		t.remove()
	}
	return nil
}
