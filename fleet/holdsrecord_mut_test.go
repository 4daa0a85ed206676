package fleet

import (
	"context"
	"errors"
	"testing"

	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// doneWithNoErr is a Context whose Done is closed while its Err stays nil
// (against Go's contract).
type doneWithNoErr struct {
	context.Context
	done chan struct{}
}

func (c doneWithNoErr) Done() <-chan struct{} { return c.done }
func (doneWithNoErr) Err() error              { return nil }

// The fleet's HoldsRecordContext, given a context directly (a Go caller
// of Begin's KeyTxn), holds it to Go's contract as the store's entries
// do: a Done closed while Err is nil is a cancel, not a read taken whole.
// And a read finished before the cancel that a look after it sees is
// thrown away with the cancel, never true beside it.
func TestHoldsRecordContextOnItsOwn(t *testing.T) {
	f := newFixture(t, etcdtest.Start(t, etcdtest.Options{Members: 1}))
	key := store.Key("github", "ctx-holds-own", "x")
	f.run(key, "one")
	st, err := f.b.meta.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	txn, err := f.b.Begin(key, baseOf(st.Record, st.Rev))
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Close()
	ct := txn.(store.ContextKeyTxn)
	closed := doneWithNoErr{context.Background(), make(chan struct{})}
	close(closed.done)
	if holds, err := ct.HoldsRecordContext(closed); holds || !errors.Is(err, context.Canceled) {
		t.Errorf("HoldsRecordContext with a Done closed and a nil Err = %v, %v; want false, context.Canceled", holds, err)
	}
	after := &cancelAtLook{Context: context.Background(), at: 2}
	if holds, err := ct.HoldsRecordContext(after); holds || !errors.Is(err, context.Canceled) {
		t.Errorf("HoldsRecordContext done after its read = %v, %v; want false, context.Canceled", holds, err)
	}
}
