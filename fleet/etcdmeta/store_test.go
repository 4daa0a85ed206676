package etcdmeta

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sessdb/internal/etcdtest"
	"sessdb/internal/faults"
)

func TestGetAbsentKey(t *testing.T) {
	etcdtest.Beside(t)
	s := open(t, etcdtest.Start1(t))
	st, err := s.Get(ctx(t), newKey())
	if err != nil || st.Rev != 0 || !reflect.DeepEqual(st.Record, Record{}) || len(st.History) != 0 || st.Read == 0 {
		t.Fatalf("Get = %+v, %v; want an empty state read at a revision", st, err)
	}
}

func TestPutThenGet(t *testing.T) {
	etcdtest.Beside(t)
	s := open(t, etcdtest.Start1(t))
	key := newKey()
	rec, e := record(key, 1), entry(1, randHex(16))
	rev, err := s.Put(ctx(t), key, 0, rec, e)
	if err != nil {
		t.Fatal(err)
	}
	st, err := s.Get(ctx(t), key)
	if err != nil {
		t.Fatal(err)
	}
	e.Seq = 1
	if st.Rev != rev || !reflect.DeepEqual(st.Record, rec) || len(st.History) != 1 || !reflect.DeepEqual(st.History[0], e) {
		t.Fatalf("Get = %+v\nwant rev %d, record %+v, history [%+v]", st, rev, rec, e)
	}
	// GetRecord reads the same record at the same revision, and no history.
	only, err := s.GetRecord(ctx(t), key)
	if err != nil || only.Rev != rev || !reflect.DeepEqual(only.Record, rec) || only.History != nil || only.Read < rev {
		t.Fatalf("GetRecord = %+v, %v; want rev %d and the record alone", only, err, rev)
	}
	// PeekRecord reads it from the one member, which is up to date.
	if peek, err := s.PeekRecord(ctx(t), key); err != nil || peek.Rev != rev || !reflect.DeepEqual(peek.Record, rec) {
		t.Fatalf("PeekRecord = %+v, %v", peek, err)
	}
	if none, err := s.GetRecord(ctx(t), newKey()); err != nil || none.Rev != 0 || !reflect.DeepEqual(none.Record, Record{}) || none.Read == 0 {
		t.Fatalf("GetRecord of an absent key = %+v, %v", none, err)
	}
}

func TestInvalidKeyTouchesNothing(t *testing.T) {
	etcdtest.Beside(t)
	s := open(t, etcdtest.Start1(t))
	for _, k := range []string{"", "../x", "0123456789abcdef0123456789abcdef/record"} {
		if _, err := s.Get(ctx(t), k); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("Get(%q) = %v", k, err)
		}
		if _, err := s.GetRecord(ctx(t), k); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("GetRecord(%q) = %v", k, err)
		}
		if _, err := s.Put(ctx(t), k, 0, Record{}, HistoryEntry{}); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("Put(%q) = %v", k, err)
		}
		if _, _, err := s.Lock(ctx(t), k); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("Lock(%q) = %v", k, err)
		}
	}
}

// Two writers that read the same base both try to promote onto it: one
// commits, every other gets a ConflictError carrying the winner's record.
func TestGuardedPutOneWinnerPerBase(t *testing.T) {
	etcdtest.Beside(t)
	s := open(t, etcdtest.Start1(t))
	key := newKey()
	base := mustPut(t, s, key, 0, 1)
	const writers = 8
	recs := make([]Record, writers)
	errs := make([]error, writers)
	revs := make([]Rev, writers)
	var wg sync.WaitGroup
	for i := range writers {
		recs[i] = record(key, 2)
		wg.Go(func() { revs[i], errs[i] = s.Put(ctx(t), key, base, recs[i], entry(2, randHex(16))) })
	}
	wg.Wait()
	winner := -1
	for i, err := range errs {
		if err == nil {
			if winner >= 0 {
				t.Fatalf("writers %d and %d both committed on base %d", winner, i, base)
			}
			winner = i
		}
	}
	if winner < 0 {
		t.Fatalf("no writer committed: %v", errs)
	}
	for i, err := range errs {
		if i == winner {
			continue
		}
		var ce *ConflictError
		if !errors.As(err, &ce) || !errors.Is(err, ErrConflict) {
			t.Fatalf("writer %d: err = %v, want *ConflictError", i, err)
		}
		if ce.Base != base || ce.Current.Rev != revs[winner] || !reflect.DeepEqual(ce.Current.Record, recs[winner]) {
			t.Fatalf("writer %d: conflict carries %+v, want the winner's record at %d", i, ce.Current, revs[winner])
		}
		if n := len(ce.Current.History); n != 2 || ce.Current.History[1].Gen != 2 {
			t.Fatalf("writer %d: conflict history = %+v, want 2 entries ending with gen 2", i, ce.Current.History)
		}
	}
	st, _ := s.Get(ctx(t), key)
	if len(st.History) != 2 {
		t.Fatalf("history has %d entries, want 2: a loser wrote one", len(st.History))
	}
}

func TestPutOnBaseZeroRefusesAnExistingRecord(t *testing.T) {
	etcdtest.Beside(t)
	s := open(t, etcdtest.Start1(t))
	key := newKey()
	rev := mustPut(t, s, key, 0, 1)
	_, err := s.Put(ctx(t), key, 0, record(key, 1), entry(1, randHex(16)))
	var ce *ConflictError
	if !errors.As(err, &ce) || ce.Current.Rev != rev {
		t.Fatalf("second create: err = %v, want a conflict with revision %d", err, rev)
	}
}

func TestHistoryKeepsTheNewest64(t *testing.T) {
	etcdtest.Beside(t)
	s := open(t, etcdtest.Start1(t))
	key := newKey()
	var rev Rev
	const n = HistoryLimit + 6
	for gen := uint64(1); gen <= n; gen++ {
		rev = mustPut(t, s, key, rev, gen)
	}
	st, err := s.Get(ctx(t), key)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.History) != HistoryLimit {
		t.Fatalf("history has %d entries, want %d", len(st.History), HistoryLimit)
	}
	for i, e := range st.History {
		if want := uint64(n - HistoryLimit + 1 + i); e.Seq != want || e.Gen != want {
			t.Fatalf("history[%d] = seq %d gen %d, want %d", i, e.Seq, e.Gen, want)
		}
	}
	// Nothing older is left in etcd, beyond what Get shows.
	resp, err := s.cli.Get(ctx(t), s.historyDir(key), clientPrefix()...)
	if err != nil || resp.Count != HistoryLimit {
		t.Fatalf("etcd holds %d history keys (%v), want %d", resp.Count, err, HistoryLimit)
	}
}

// A history brought in with gaps between its seqs (a single host's
// history after lost promotions) is trimmed to the ring within
// HistoryLimit writes: each write deletes the one slot it pushes out, and
// every HistoryLimit-th sweeps what lies below.
func TestHistoryWithGapsIsTrimmed(t *testing.T) {
	etcdtest.Beside(t)
	s := open(t, etcdtest.Start1(t))
	key := newKey()
	var hist []HistoryEntry
	for i := uint64(1); i <= HistoryLimit; i++ {
		e := entry(i, randHex(16))
		e.Seq = 10*i + 1
		hist = append(hist, e)
	}
	rev, err := s.Create(ctx(t), key, record(key, HistoryLimit), hist)
	if err != nil {
		t.Fatal(err)
	}
	last := hist[len(hist)-1].Seq
	for gen := uint64(HistoryLimit + 1); last%HistoryLimit != 0; gen++ {
		rev = mustPut(t, s, key, rev, gen)
		last++
	}
	resp, err := s.cli.Get(ctx(t), s.historyDir(key), clientPrefix()...)
	if err != nil || resp.Count != HistoryLimit {
		t.Fatalf("after the sweep at seq %d etcd holds %d history keys (%v), want %d", last, resp.Count, err, HistoryLimit)
	}
	st, err := s.Get(ctx(t), key)
	if err != nil || len(st.History) != HistoryLimit || st.History[0].Seq != last-HistoryLimit+1 {
		t.Fatalf("Get: %d entries from seq %d (%v), want %d from %d", len(st.History), st.History[0].Seq, err, HistoryLimit, last-HistoryLimit+1)
	}
}

// A refusal is recorded without moving the record's revision, and only
// onto the record it was decided on.
func TestAppendHistoryIsGuardedAndLeavesTheRecord(t *testing.T) {
	etcdtest.Beside(t)
	s := open(t, etcdtest.Start1(t))
	key := newKey()
	rev := mustPut(t, s, key, 0, 1)
	refusal := HistoryEntry{Gen: 1, Outcome: "superseded", Ticket: randHex(16)}
	got, err := s.AppendHistory(ctx(t), key, rev, refusal)
	if err != nil || got != rev {
		t.Fatalf("AppendHistory = %d, %v; want %d", got, err, rev)
	}
	st, _ := s.Get(ctx(t), key)
	if st.Rev != rev || len(st.History) != 2 || st.History[1].Outcome != "superseded" || st.History[1].Seq != 2 {
		t.Fatalf("state = %+v", st)
	}
	// A put on the same base still wins: the refusal superseded no one.
	rev2 := mustPut(t, s, key, rev, 2)
	if _, err := s.AppendHistory(ctx(t), key, rev, refusal); !errors.Is(err, ErrConflict) {
		t.Fatalf("AppendHistory on a stale base = %v, want a conflict", err)
	}
	st, _ = s.Get(ctx(t), key)
	if st.Rev != rev2 || len(st.History) != 3 || st.History[2].Seq != 3 {
		t.Fatalf("state = %+v", st)
	}
}

// Refusals and a promotion racing for the same history slot all land, each
// in a slot of its own.
func TestConcurrentAppendsTakeDistinctSlots(t *testing.T) {
	etcdtest.Beside(t)
	s := open(t, etcdtest.Start1(t))
	key := newKey()
	rev := mustPut(t, s, key, 0, 1)
	const n = 6
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			_, errs[i] = s.AppendHistory(ctx(t), key, rev, HistoryEntry{Gen: 1, Outcome: "run-incomplete", Ticket: fmt.Sprint(i)})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
	st, _ := s.Get(ctx(t), key)
	seen := map[string]bool{}
	for i, e := range st.History {
		if e.Seq != uint64(i+1) {
			t.Fatalf("history seqs not 1..%d: %+v", n+1, st.History)
		}
		seen[e.Ticket] = true
	}
	if len(st.History) != n+1 || len(seen) != n+1 {
		t.Fatalf("history = %+v, want the promotion and %d distinct refusals", st.History, n)
	}
}

func TestDeleteIsGuarded(t *testing.T) {
	etcdtest.Beside(t)
	s := open(t, etcdtest.Start1(t))
	key := newKey()
	rev := mustPut(t, s, key, 0, 1)
	rev2 := mustPut(t, s, key, rev, 2)
	if _, err := s.Delete(ctx(t), key, rev); !errors.Is(err, ErrConflict) {
		t.Fatalf("Delete on a stale base = %v, want a conflict", err)
	}
	if _, err := s.Delete(ctx(t), key, rev2); err != nil {
		t.Fatal(err)
	}
	st, err := s.Get(ctx(t), key)
	if err != nil || st.Rev != 0 || len(st.History) != 0 {
		t.Fatalf("after delete: %+v, %v", st, err)
	}
	// The key starts again from scratch.
	mustPut(t, s, key, 0, 1)
	st, _ = s.Get(ctx(t), key)
	if len(st.History) != 1 || st.History[0].Seq != 1 {
		t.Fatalf("history after re-create = %+v", st.History)
	}
}

func TestDamagedRecordIsNamedAndRepairable(t *testing.T) {
	etcdtest.Beside(t)
	s := open(t, etcdtest.Start1(t))
	key := newKey()
	mustPut(t, s, key, 0, 1)
	resp, err := s.cli.Put(ctx(t), s.recordKey(key), "\xc1garbage")
	if err != nil {
		t.Fatal(err)
	}
	st, err := s.Get(ctx(t), key)
	if !errors.Is(err, ErrDamaged) || st.Rev != Rev(resp.Header.Revision) || len(st.History) != 1 {
		t.Fatalf("Get = %+v, %v; want ErrDamaged with the revision and history", st, err)
	}
	if only, err := s.GetRecord(ctx(t), key); !errors.Is(err, ErrDamaged) || only.Rev != st.Rev {
		t.Fatalf("GetRecord = %+v, %v; want ErrDamaged with the revision", only, err)
	}
	if _, err := s.Delete(ctx(t), key, st.Rev); err != nil {
		t.Fatalf("guarded delete of the damaged record: %v", err)
	}
}

func TestListWalksEveryRecordInPages(t *testing.T) {
	s := open(t, etcdtest.Start1(t))
	keys := map[string]Rev{}
	for range 7 {
		k := newKey()
		keys[k] = mustPut(t, s, k, 0, 1)
	}
	// A foreign name under the records is reported, not fatal.
	if _, err := s.cli.Put(ctx(t), s.cfg.Prefix+"/record/not-a-key", "x"); err != nil {
		t.Fatal(err)
	}
	saved := listPageSize
	listPageSize = 3
	defer func() { listPageSize = saved }()
	seen := map[string]Rev{}
	var bad []string
	prev := ""
	err := s.List(ctx(t), func(it Item) error {
		if it.Key <= prev {
			t.Errorf("List out of order: %q after %q", it.Key, prev)
		}
		prev = it.Key
		if it.Err != nil {
			if !errors.Is(it.Err, ErrInvalidKey) {
				t.Errorf("item %q: %v", it.Key, it.Err)
			}
			bad = append(bad, it.Key)
			return nil
		}
		if it.Record.Transcript == nil || it.Record.Transcript.Gen != 1 {
			t.Errorf("item %q: record %+v", it.Key, it.Record)
		}
		seen[it.Key] = it.Rev
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(seen, keys) || len(bad) != 1 {
		t.Fatalf("List saw %v and bad %v, want %v", seen, bad, keys)
	}
	stop := errors.New("stop")
	n := 0
	if err := s.List(ctx(t), func(Item) error { n++; return stop }); err != stop || n != 1 {
		t.Fatalf("List with a failing fn = %v after %d items", err, n)
	}
}

func TestClosedStore(t *testing.T) {
	etcdtest.Beside(t)
	s := open(t, etcdtest.Start1(t))
	s.Close()
	if _, err := s.Get(ctx(t), newKey()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Get after Close = %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
}

// A writer whose guess of the key's newest history slot is far behind
// (another process appended a whole ring of refusals since, and the trims
// removed the slot after its guess) still appends above the newest entry:
// an entry written into a freed slot below would be outside the ring that
// Get reads, and a retried ticket could no longer find its promotion.
func TestAStaleSlotGuessAppendsAboveTheNewest(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	a, b := open(t, c), open(t, c)
	key := newKey()
	rev := mustPut(t, a, key, 0, 1) // a now guesses slot 1 is the newest
	promoteAfterARingOfRefusals(t, b, a, key, rev, HistoryLimit+3)
}

// A record carries the key's newest history slot as of its write, so that
// a writer in a new process (a CLI promote: a serializable read of the
// record, then the guarded put) claims its slot without reading the
// history first. The hint is only a guess: behind the newest entry
// (refusals appended since), or absent (a record written before the hint
// existed), the put still lands above the newest entry.
func TestARecordHintsItsNewestHistorySlot(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	a := open(t, c)
	key := newKey()
	var rev Rev
	for gen := uint64(1); gen <= 3; gen++ {
		rev = mustPut(t, a, key, rev, gen)
	}
	putFresh := func(t *testing.T, wantGuess uint64, guessed bool) {
		t.Helper()
		fresh := open(t, c)
		st, err := fresh.PeekRecord(ctx(t), key)
		if err != nil || st.Rev != rev {
			t.Fatalf("PeekRecord = rev %d, %v; want %d", st.Rev, err, rev)
		}
		if seq, ok := fresh.cachedSeq(key); ok != guessed || seq != wantGuess {
			t.Fatalf("after reading the record the new process guesses slot %d (%v), want %d (%v)", seq, ok, wantGuess, guessed)
		}
		ticket := randHex(16)
		if rev, err = fresh.Put(ctx(t), key, rev, record(key, st.Record.Transcript.Gen+1), entry(st.Record.Transcript.Gen+1, ticket)); err != nil {
			t.Fatal(err)
		}
		got, err := a.Get(ctx(t), key)
		if err != nil {
			t.Fatal(err)
		}
		before := len(got.History) - 2
		if newest := got.History[len(got.History)-1]; newest.Ticket != ticket || newest.Seq != got.History[before].Seq+1 {
			t.Fatalf("newest entry = seq %d ticket %q, want the new promotion's right above seq %d", newest.Seq, newest.Ticket, got.History[before].Seq)
		}
	}
	t.Run("current", func(t *testing.T) { putFresh(t, 3, true) })
	t.Run("behind", func(t *testing.T) {
		for i := range 2 {
			if _, err := a.AppendHistory(ctx(t), key, rev, HistoryEntry{Gen: 4, Outcome: "run-incomplete", Ticket: fmt.Sprint(i)}); err != nil {
				t.Fatal(err)
			}
		}
		putFresh(t, 4, true) // the record was written at slot 4; refusals took 5 and 6
	})
	t.Run("absent", func(t *testing.T) {
		st, err := a.Get(ctx(t), key)
		if err != nil {
			t.Fatal(err)
		}
		old, err := encodeRecord(st.Record, 0)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := a.cli.Put(ctx(t), a.recordKey(key), string(old))
		if err != nil {
			t.Fatal(err)
		}
		rev = Rev(resp.Header.Revision)
		putFresh(t, 0, false)
	})
}

// A List whose snapshot etcd compacts under it (between two pages) goes
// on at the newest revision from where it was: every record once, in
// order, none twice; and a guarded write whose base revision is older
// than the compaction still commits while the record is at it, and
// loses its compare once it is not.
func TestListAndGuardedWritesAcrossACompaction(t *testing.T) {
	s := open(t, etcdtest.Start1(t))
	keys := map[string]Rev{}
	for range 5 {
		k := newKey()
		keys[k] = mustPut(t, s, k, 0, 1)
	}
	saved := listPageSize
	listPageSize = 2
	defer func() { listPageSize = saved }()
	seen := map[string]Rev{}
	compacted := false
	err := s.List(ctx(t), func(it Item) error {
		if _, dup := seen[it.Key]; dup || it.Err != nil {
			t.Errorf("item %q again, or %v", it.Key, it.Err)
		}
		seen[it.Key] = it.Rev
		if !compacted {
			compacted = true
			// A write after the snapshot, then a compaction past it.
			resp, err := s.cli.Put(ctx(t), s.cfg.Prefix+"/other", "x")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.cli.Compact(ctx(t), resp.Header.Revision); err != nil {
				t.Fatal(err)
			}
		}
		return nil
	})
	if err != nil || !reflect.DeepEqual(seen, keys) {
		t.Fatalf("List across a compaction saw %v, %v; want %v", seen, err, keys)
	}
	var k string
	var base Rev
	for k, base = range keys {
		break
	}
	next, err := s.Put(ctx(t), k, base, Record{Transcript: &Transcript{Gen: 2, File: k + "/2"}}, HistoryEntry{Gen: 2})
	if err != nil {
		t.Fatalf("put on a base older than the compaction: %v", err)
	}
	resp, _ := s.cli.Get(ctx(t), s.cfg.Prefix+"/other")
	if _, err := s.cli.Compact(ctx(t), resp.Header.Revision); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx(t), k, base, Record{}, HistoryEntry{Gen: 3}); !errors.Is(err, ErrConflict) {
		t.Fatalf("put on a superseded, compacted base: %v; want a conflict", err)
	}
	if st, err := s.Get(ctx(t), k); err != nil || st.Rev != next {
		t.Fatalf("the key holds %d, %v; want %d", st.Rev, err, next)
	}
}

// A slot guess left from a key's earlier life (this Store wrote it; then
// another host's reap deleted the key and promoted it anew) is no longer
// the newest slot: the next write claims the slot right above the new
// life's newest entry. A write far above it left a gap, and one at a
// sweep's slot deleted the new life's whole history, entries a retried
// promote looks for its ticket in.
func TestAGuessFromADeletedKeyKeepsTheNewHistory(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	a, b := open(t, c), open(t, c)
	key := newKey()
	old := entry(1, randHex(16))
	old.Seq = 2*HistoryLimit - 1 // a's next write would sweep below it
	rev, err := a.Create(ctx(t), key, record(key, 1), []HistoryEntry{old})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Delete(ctx(t), key, rev); err != nil {
		t.Fatal(err)
	}
	rev = 0
	for gen := uint64(1); gen <= 3; gen++ {
		rev = mustPut(t, b, key, rev, gen)
	}
	// a reads the record as a promotion does, which keeps its guess.
	if st, err := a.PeekRecord(ctx(t), key); err != nil || st.Rev != rev {
		t.Fatalf("PeekRecord = rev %d, %v; want %d", st.Rev, err, rev)
	}
	ticket := randHex(16)
	if _, err := a.Put(ctx(t), key, rev, record(key, 4), entry(4, ticket)); err != nil {
		t.Fatal(err)
	}
	st, err := b.Get(ctx(t), key)
	if err != nil {
		t.Fatal(err)
	}
	var seqs []uint64
	for _, e := range st.History {
		seqs = append(seqs, e.Seq)
	}
	if !slices.Equal(seqs, []uint64{1, 2, 3, 4}) || st.History[3].Ticket != ticket {
		t.Fatalf("history holds seqs %v (newest ticket %q), want 1 2 3 and the put's at 4 (%q)", seqs, st.History[len(st.History)-1].Ticket, ticket)
	}
}

// The last slot (all f) is no slot (parseSeq): a write never claims it,
// nor does Create bring an entry in at it. Claimed after an entry brought
// in at the slot below (a key dir's history whose seqs come from a
// generation that high, or a damaged meta.db), the write committed and
// every Get and write of the key after it was ErrDamaged; brought in by
// Create, the key was so from the start.
func TestTheLastHistorySlotIsNeverWritten(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	s := open(t, c)
	key := newKey()
	e := entry(1, randHex(16))
	e.Seq = math.MaxUint64
	if _, err := s.Create(ctx(t), key, record(key, 1), []HistoryEntry{e}); !errors.Is(err, ErrDamaged) {
		t.Fatalf("Create with an entry at the last slot = %v, want ErrDamaged", err)
	}
	if st, err := s.Get(ctx(t), key); err != nil || st.Rev != 0 || len(st.History) != 0 {
		t.Fatalf("after a refused Create: rev %d, %d entries, %v; want nothing written", st.Rev, len(st.History), err)
	}

	e.Seq = math.MaxUint64 - 1
	rev, err := s.Create(ctx(t), key, record(key, 1), []HistoryEntry{e})
	if err != nil {
		t.Fatal(err)
	}
	// This Store remembers the slot from its Create, a new one reads it
	// first, one given a hint of the slot above takes the record's.
	fresh, hinted := open(t, c), open(t, c)
	hinted.rememberSeq(key, math.MaxUint64)
	for i, w := range []*Store{s, fresh, hinted} {
		name := []string{"same", "fresh", "hinted"}[i]
		if _, err := w.Put(ctx(t), key, rev, record(key, 2), entry(2, randHex(16))); !errors.Is(err, ErrDamaged) {
			t.Fatalf("Put above the last but one slot (%s store) = %v, want ErrDamaged", name, err)
		}
		if _, err := w.AppendHistory(ctx(t), key, rev, entry(2, randHex(16))); !errors.Is(err, ErrDamaged) {
			t.Fatalf("AppendHistory above the last but one slot (%s store) = %v, want ErrDamaged", name, err)
		}
	}
	if st, err := s.Get(ctx(t), key); err != nil || st.Rev != rev || len(st.History) != 1 || st.History[0].Seq != math.MaxUint64-1 {
		t.Fatalf("after the refused writes: rev %d, %d entries, %v; want rev %d and the entry brought in", st.Rev, len(st.History), err, rev)
	}
}

// An append sent again (a hedged refusal: the tries race, each with the
// slot this Store guessed before any landed) finds its slot taken by the
// very entry it carries: that is the append, landed, and it is not
// appended again above it. Two Stores with one guess stand in for two
// tries in flight.
func TestAnAppendSentTwiceLandsOnce(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	a, b := open(t, c), open(t, c)
	key := newKey()
	rev := mustPut(t, a, key, 0, 1)
	if _, err := b.Get(ctx(t), key); err != nil { // b guesses slot 1 is the newest, as a does
		t.Fatal(err)
	}
	refusal := HistoryEntry{Gen: 1, At: time.Now().UnixNano(), Outcome: "superseded", Ticket: randHex(16), Job: "j"}
	for _, s := range []*Store{a, b} {
		if got, err := s.AppendHistory(ctx(t), key, rev, refusal); err != nil || got != rev {
			t.Fatalf("AppendHistory = %d, %v; want %d", got, err, rev)
		}
	}
	st, err := a.Get(ctx(t), key)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.History) != 2 || st.History[1].Ticket != refusal.Ticket {
		t.Fatalf("history = %+v; want the promotion and the refusal once", st.History)
	}
	// Another entry, in the slot's way, still lands above it.
	other := refusal
	other.At++
	if _, err := b.AppendHistory(ctx(t), key, rev, other); err != nil {
		t.Fatal(err)
	}
	if st, _ = a.Get(ctx(t), key); len(st.History) != 3 {
		t.Fatalf("history = %+v; want the promotion and two refusals", st.History)
	}
}

// List with no function to call is a caller's mistake, refused with an
// error that says so: it panicked at the first record, in a walk the
// caller may not be able to recover (the fleet's walks call it from their
// own goroutines).
func TestListRefusesANilFunction(t *testing.T) {
	etcdtest.Beside(t)
	s := open(t, etcdtest.Start1(t))
	mustPut(t, s, newKey(), 0, 1)
	err := s.List(ctx(t), nil)
	if !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("List(nil) = %v; want ErrInvalidArgument", err)
	}
}

// A hedged append's second try that takes its guess of the newest slot
// after the first try landed (from the slot the first try's answer left
// in the cache, or, the cache emptied meanwhile, from a read of the
// newest slot) still finds the entry in place and lands nothing: its
// guard covers the entry, not just the slot. Before, it claimed the slot
// above the first try's entry, and the refusal was recorded twice.
func TestAnAppendWhoseSecondTryGuessesAfterTheFirstLandedLandsOnce(t *testing.T) {
	for _, emptied := range []bool{false, true} {
		t.Run(map[bool]string{false: "cache-updated", true: "cache-emptied"}[emptied], func(t *testing.T) {
			c := etcdtest.Start1(t)
			s := open(t, c)
			key := newKey()
			rev := mustPut(t, s, key, 0, 1)
			refusal := HistoryEntry{Gen: 1, At: time.Now().UnixNano(), Outcome: "superseded", Ticket: randHex(16), Job: "j"}

			held, release := make(chan struct{}), make(chan struct{})
			var tries atomic.Int32
			faults.Set(func(p faults.Point) error {
				if p == faults.EtcdWriteBeforeGuess && tries.Add(1) == 1 {
					close(held)
					<-release
				}
				return nil
			})
			t.Cleanup(func() { faults.Set(nil) })
			second := make(chan error, 1)
			go func() {
				_, err := s.AppendHistory(ctx(t), key, rev, refusal)
				second <- err
			}()
			<-held
			if _, err := s.AppendHistory(ctx(t), key, rev, refusal); err != nil {
				t.Fatal(err)
			}
			if emptied {
				s.mu.Lock()
				s.lastSeq = nil
				s.mu.Unlock()
			}
			close(release)
			if err := <-second; err != nil {
				t.Fatalf("the second try: %v", err)
			}
			st, err := s.Get(ctx(t), key)
			if err != nil {
				t.Fatal(err)
			}
			if len(st.History) != 2 || st.History[1].Ticket != refusal.Ticket {
				t.Fatalf("history = %+v; want the promotion and the refusal once", st.History)
			}
		})
	}
}
