package etcdmeta

import (
	"errors"
	"reflect"
	"testing"

	"sessdb/internal/etcdtest"
)

// Create brings a key in whole: the record and every history entry with
// its own Seq, the newest HistoryLimit of a longer history, in one
// transaction; a key that holds a record or any history entry is left as
// it is, and the conflict carries what it holds.
func TestCreate(t *testing.T) {
	etcdtest.Beside(t)
	s := open(t, etcdtest.Start1(t))
	key := newKey()
	var hist []HistoryEntry
	for gen := uint64(1); gen <= HistoryLimit+6; gen++ {
		e := entry(gen, randHex(16))
		e.Seq = gen + 4 // a single host's seqs begin at the first entry's gen
		hist = append(hist, e)
	}
	rec := record(key, HistoryLimit+6)
	rev, err := s.Create(ctx(t), key, rec, hist)
	if err != nil {
		t.Fatal(err)
	}
	st, err := s.Get(ctx(t), key)
	if err != nil {
		t.Fatal(err)
	}
	if want := hist[6:]; st.Rev != rev || !reflect.DeepEqual(st.Record, rec) || !reflect.DeepEqual(st.History, want) {
		t.Fatalf("Get = rev %d, %d entries (first seq %d); want rev %d, the newest %d entries, seqs kept",
			st.Rev, len(st.History), st.History[0].Seq, rev, len(want))
	}

	// The next promotion takes the slot after the last one brought in, and
	// trims the oldest.
	next := entry(HistoryLimit+7, randHex(16))
	if _, err := s.Put(ctx(t), key, rev, record(key, HistoryLimit+7), next); err != nil {
		t.Fatal(err)
	}
	st, err = s.Get(ctx(t), key)
	if err != nil {
		t.Fatal(err)
	}
	if last := st.History[len(st.History)-1]; last.Seq != hist[len(hist)-1].Seq+1 || len(st.History) != HistoryLimit {
		t.Fatalf("after a put: last seq %d of %d entries, want %d of %d", last.Seq, len(st.History), hist[len(hist)-1].Seq+1, HistoryLimit)
	}

	// A second Create conflicts, and writes nothing.
	_, err = s.Create(ctx(t), key, record(key, 1), nil)
	var ce *ConflictError
	if !errors.As(err, &ce) || !errors.Is(err, ErrConflict) || ce.Current.Rev != st.Rev || ce.Op != "create" {
		t.Fatalf("Create over a record = %v, want a conflict carrying rev %d", err, st.Rev)
	}
	if again, _ := s.Get(ctx(t), key); again.Rev != st.Rev {
		t.Fatalf("a conflicting Create wrote: rev %d, was %d", again.Rev, st.Rev)
	}

	// A history left without a record is no key sessdb wrote: not written
	// over.
	orphan := newKey()
	if _, err := s.AppendHistory(ctx(t), orphan, 0, entry(1, randHex(16))); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx(t), orphan, record(orphan, 1), nil); !errors.As(err, &ce) || ce.Current.Rev != 0 || len(ce.Current.History) != 1 {
		t.Fatalf("Create over a history = %v, want a conflict carrying it", err)
	}

	// Out of order, or an invalid key: nothing is tried.
	bad := []HistoryEntry{entry(2, randHex(16)), entry(1, randHex(16))}
	bad[0].Seq, bad[1].Seq = 2, 2
	if _, err := s.Create(ctx(t), newKey(), record(key, 2), bad); !errors.Is(err, ErrHistoryOrder) {
		t.Fatalf("Create with seqs 2, 2 = %v", err)
	}
	if _, err := s.Create(ctx(t), "../x", rec, nil); !errors.Is(err, ErrInvalidKey) {
		t.Fatalf("Create of an invalid key = %v", err)
	}
}
