package fleet

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// A commit that loses its compare marks its base superseded, and the
// Backend's next Begin on a base at or below a mark reads the key (record
// and history, from the leader) instead of trusting the nearest member,
// which may still show the base (Begin's doc, staleRevs). One member
// shows no lag, so the outcome of either is the same here: the test reads
// the marks and the txn's kind. Before (mutants T14 and T04 of mutfleet46's
// sweep: conflict's mark dropped; optimistic's stale.has dropped), no test
// looked: a lost commit left no mark, and a marked base was taken on the
// member's word again, for one more lost compare behind a lagging member.
func TestALostCommitMarksItsBaseAndAMarkedBaseIsRead(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	key := store.Key("github", "stale", "begin")
	f.run(key, "one")
	current := func() store.Base {
		t.Helper()
		x, err := f.b.Begin(key, store.Base{})
		if err != nil {
			t.Fatal(err)
		}
		defer x.Close()
		_, _, base := x.State()
		return base
	}
	base := current()
	x, err := f.b.Begin(key, base)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if !x.(*txn).optimistic {
		t.Fatal("Begin on the key's current base, never marked, read the key; want it taken optimistically")
	}
	f.run(key, "two") // another job moves the key on under x
	data := []byte(testHeader)
	st, err := x.Stage(base.Gen+1, bytes.NewReader(data), int64(len(data)), false)
	if err != nil {
		t.Fatal(err)
	}
	pi := "0.58.3"
	rec := db.Sidecars{Transcript: &db.Transcript{Gen: base.Gen + 1, Size: st.Size, CRC32C: uint64(st.CRC32C), PromotedAt: db.RecordedAt(time.Now())}, PiVersion: &pi}
	err = x.Commit(st, rec, db.HistoryEntry{Gen: base.Gen + 1, At: db.RecordedAt(time.Now()), Outcome: string(gates.Promoted), Ticket: strings.Repeat("b", 32)})
	if !errors.Is(err, store.ErrConflict) {
		t.Fatalf("commit on a base another job moved on = %v; want store.ErrConflict", err)
	}
	if !f.b.stale.has(key, base.Rev) {
		t.Errorf("the base (rev %d) of a commit that lost its compare is not marked superseded", base.Rev)
	}
	// A base marked superseded is read, even where a member shows it in
	// place (here: marked by hand at the key's current revision).
	now := current()
	f.b.stale.mark(key, now.Rev)
	y, err := f.b.Begin(key, now)
	if err != nil {
		t.Fatal(err)
	}
	defer y.Close()
	if y.(*txn).optimistic {
		t.Errorf("Begin on a base marked superseded (rev %d) took it on the member's word; want the key read", now.Rev)
	}
}
