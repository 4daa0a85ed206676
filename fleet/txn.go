package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"sessdb/db"
	"sessdb/fleet/etcdmeta"
	"sessdb/fleet/shared"
	"sessdb/gates"
	"sessdb/store"
)

// Begin reads key's record and history in one linearizable read, for a
// promotion. Nothing is locked: the commit is guarded by the revision read
// here. A key whose directory in the transcripts dir is a link or not a
// directory is store.ErrKeyDirNotADirectory; a record that does not decode
// or is of a newer schema is an error (never written over), as is etcd
// not answering.
func (b *Backend) Begin(key string) (store.KeyTxn, error) {
	if !etcdmeta.ValidKey(key) {
		return nil, fmt.Errorf("begin %q: %w", key, store.ErrInvalidKey)
	}
	if fi, err := os.Lstat(filepath.Join(b.dir, key)); err == nil && !fi.IsDir() {
		return nil, store.ErrKeyDirNotADirectory
	}
	st, err := b.read(key, b.meta.Get)
	if err != nil {
		return nil, err
	}
	if err := b.at(hookStage, key); err != nil {
		return nil, err
	}
	return &txn{b: b, key: key, st: st}, nil
}

// txn is one key as a promotion sees it: the state read by Begin, and the
// file Stage wrote.
type txn struct {
	b   *Backend
	key string
	st  etcdmeta.State
	// staged is the file Stage wrote; Close removes it unless it was
	// committed, or a commit's answer was lost (unsure): then it may be
	// the key's generation, and only reap, which reads the record, may
	// remove it.
	staged    string
	committed bool
	unsure    bool
}

func (t *txn) State() (db.Sidecars, []db.HistoryEntry, store.Base) {
	return sidecarsOf(t.st.Record), historyOf(t.st.History), baseOf(t.st.Record)
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
func (t *txn) Refuse(e db.HistoryEntry) error {
	if t.st.Rev == 0 {
		return nil // a key with no record keeps no history
	}
	ctx, cancel := t.b.deadline()
	defer cancel()
	base := t.st.Rev
	for try := 0; ; try++ {
		_, err := t.b.meta.AppendHistory(ctx, t.key, base, entryOf(e))
		var ce *etcdmeta.ConflictError
		switch {
		case err == nil:
			return nil
		case errors.As(err, &ce) && e.Outcome == string(gates.Superseded) && ce.Current.Rev != 0 && ce.Current.Record.Transcript != nil:
			base, e.Gen = ce.Current.Rev, ce.Current.Record.Transcript.Gen
			continue
		case errors.Is(err, etcdmeta.ErrConflict):
			return fmt.Errorf("%w: %w", store.ErrConflict, err)
		case !errors.Is(err, etcdmeta.ErrUnavailable) || !backoff(ctx, try):
			return err
		}
		st, gerr := t.b.meta.Get(ctx, t.key)
		switch {
		case gerr != nil:
			continue
		case recorded(st.History, e):
			return nil
		case st.Rev != base && e.Outcome == string(gates.Superseded) && st.Record.Transcript != nil:
			base, e.Gen = st.Rev, st.Record.Transcript.Gen
		case st.Rev != base:
			return fmt.Errorf("refuse %s: %w", t.key, store.ErrConflict)
		}
	}
}

func recorded(h []etcdmeta.HistoryEntry, e db.HistoryEntry) bool {
	for _, x := range h {
		if x.Ticket == e.Ticket && x.Outcome == e.Outcome && x.At == e.At {
			return true
		}
	}
	return false
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
// whose record names this file is this commit, landed by an earlier try.
func (t *txn) Commit(st store.Staged, rec db.Sidecars, e db.HistoryEntry) error {
	if err := t.b.at(hookCommit, t.key); err != nil {
		return err
	}
	r, h := recordOf(rec, st.Name), entryOf(e)
	ctx, cancel := t.b.deadline()
	defer cancel()
	for try := 0; ; try++ {
		_, err := t.b.meta.Put(ctx, t.key, t.st.Rev, r, h)
		var ce *etcdmeta.ConflictError
		switch {
		case err == nil:
		case errors.As(err, &ce):
			if cur := ce.Current.Record.Transcript; t.unsure && cur != nil && cur.File == st.Name {
				t.b.landedLate.Add(1)
				break // an earlier try landed
			}
			if !t.unsure {
				t.remove()
			}
			return fmt.Errorf("%w: %w", store.ErrConflict, err)
		case errors.Is(err, etcdmeta.ErrUnavailable):
			t.unsure = true
			if backoff(ctx, try) {
				continue
			}
			return err
		default:
			return err
		}
		t.committed = true
		return t.b.at(hookAfterCommit, t.key)
	}
}

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
