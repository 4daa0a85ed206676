package etcdmeta

import (
	"errors"
	"testing"

	"google.golang.org/grpc/codes"

	"sessdb/internal/etcdtest"
)

// etcd's client sends a write again by itself when its answer is a
// context error's while the caller's context lives (LoseNextAs): the
// caller sees only the second send's answer, a conflict with the first,
// served. The conflict says so (Resent), since a delete, landed, leaves
// nothing to be told from another's by; a conflict of a write sent once
// does not. Put and Create find their own record, which names their
// file.
func TestAConflictSaysTheClientSentTheWriteAgain(t *testing.T) {
	const txn = "/etcdserverpb.KV/Txn"
	c := etcdtest.Start(t, etcdtest.Options{Members: 1, InProcess: true})
	t.Cleanup(func() { c.LoseNextAs(txn, 0, 0, codes.DeadlineExceeded) })
	s := open(t, c)
	conflict := func(what string, err error, resent bool) *ConflictError {
		t.Helper()
		var ce *ConflictError
		if !errors.As(err, &ce) || ce.Resent != resent {
			t.Fatalf("%s: %v (%+v); want a conflict, Resent %v", what, err, ce, resent)
		}
		return ce
	}

	key := newKey()
	rev := mustPut(t, s, key, 0, 1)
	_, err := s.Delete(ctx(t), key, rev+1)
	conflict("a delete on a base gone, sent once", err, false)
	c.LoseNextAs(txn, 0, 1, codes.DeadlineExceeded)
	_, err = s.Delete(ctx(t), key, rev)
	if ce := conflict("a delete sent again", err, true); ce.Current.Rev != 0 {
		t.Fatalf("a delete sent again: the key holds a record at %d", ce.Current.Rev)
	}

	key = newKey()
	rec := record(key, 1)
	c.LoseNextAs(txn, 0, 1, codes.Canceled)
	_, err = s.Create(ctx(t), key, rec, []HistoryEntry{{Seq: 1, Gen: 1, Ticket: randHex(16)}})
	if ce := conflict("a create sent again", err, true); ce.Current.Record.Transcript == nil || ce.Current.Record.Transcript.File != rec.Transcript.File {
		t.Fatalf("a create sent again: the key holds %+v, want its own record", ce.Current.Record)
	}
	_, err = s.Create(ctx(t), key, rec, nil)
	conflict("a create on a key held, sent once", err, false)

	st, err := s.GetRecord(ctx(t), key)
	if err != nil {
		t.Fatal(err)
	}
	rec = record(key, 2)
	// A put with a slot remembered sends its transaction first.
	c.LoseNextAs(txn, 0, 1, codes.DeadlineExceeded)
	_, err = s.Put(ctx(t), key, st.Rev, rec, entry(2, randHex(16)))
	if ce := conflict("a put sent again", err, true); ce.Current.Record.Transcript == nil || ce.Current.Record.Transcript.File != rec.Transcript.File {
		t.Fatalf("a put sent again: the key holds %+v, want its own record", ce.Current.Record)
	}
	_, err = s.Put(ctx(t), key, st.Rev, record(key, 2), entry(2, randHex(16)))
	conflict("a put on a base gone, sent once", err, false)
}
