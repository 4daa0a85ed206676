package etcdmeta

import (
	"errors"
	"reflect"
	"testing"

	"sessdb/internal/etcdtest"
)

// Create sets the record's HistoryGen to the highest generation its
// history names above the record's transcript, whatever the caller gave
// and in whatever order the entries name them, and Get reads it back: a
// promotion onto a key brought in so numbers its generation above every
// one the history holds (fleet's txn), where a HistoryGen lost or too low
// would number a generation the history already names.
func TestCreateSetsHistoryGenFromTheHistory(t *testing.T) {
	etcdtest.Beside(t)
	s := open(t, etcdtest.Start1(t))
	for _, tc := range []struct {
		name  string
		tgen  uint64 // the record's transcript's generation; 0: none
		given uint64 // the caller's HistoryGen, which Create ignores
		gens  []uint64
		want  uint64
	}{
		{"the highest above the transcript, not the newest", 5, 0, []uint64{3, 9, 7}, 9},
		{"none above the transcript", 10, 99, []uint64{3, 4}, 0},
		{"no transcript", 0, 0, []uint64{2, 1}, 2},
	} {
		key := newKey()
		rec := record(key, tc.tgen)
		if tc.tgen == 0 {
			rec.Transcript = nil
		}
		rec.HistoryGen = tc.given
		var hist []HistoryEntry
		for i, g := range tc.gens {
			e := entry(g, randHex(16))
			e.Seq = uint64(i + 1)
			hist = append(hist, e)
		}
		if _, err := s.Create(ctx(t), key, rec, hist); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		st, err := s.Get(ctx(t), key)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if st.Record.HistoryGen != tc.want {
			t.Errorf("%s: transcript gen %d, history gens %v: HistoryGen = %d, want %d", tc.name, tc.tgen, tc.gens, st.Record.HistoryGen, tc.want)
		}
	}
}

// A Create over a record that has no history (a key brought in whole
// with none, by another host's migration) is a conflict carrying that
// record, which stays as it was: the record's own compare refuses it,
// where the history's finds nothing to refuse. Two hosts bringing in one
// key write it once.
func TestCreateOverARecordWithoutHistoryConflicts(t *testing.T) {
	etcdtest.Beside(t)
	s := open(t, etcdtest.Start1(t))
	key := newKey()
	first := record(key, 3)
	rev, err := s.Create(ctx(t), key, first, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Create(ctx(t), key, record(key, 4), nil)
	var ce *ConflictError
	if !errors.As(err, &ce) || ce.Current.Rev != rev || !reflect.DeepEqual(ce.Current.Record, first) {
		t.Fatalf("a second Create of a key with a record and no history = %v; want a conflict carrying the first record at rev %d", err, rev)
	}
	st, err := s.Get(ctx(t), key)
	if err != nil || st.Rev != rev || !reflect.DeepEqual(st.Record, first) {
		t.Fatalf("after the second Create: rev %d, gen %d, %v; want the first record, rev %d, gen 3", st.Rev, st.Record.Transcript.Gen, err, rev)
	}
}

// Create writes the newest HistoryLimit entries of a longer history and
// nothing older, from one entry over the limit on: an older entry left
// in etcd lies below the ring Get reads, where no write's trim of one
// slot reaches it until a sweep.
func TestCreateOfOneEntryOverTheLimitWritesTheNewest(t *testing.T) {
	etcdtest.Beside(t)
	s := open(t, etcdtest.Start1(t))
	key := newKey()
	var hist []HistoryEntry
	for gen := uint64(1); gen <= HistoryLimit+1; gen++ {
		e := entry(gen, randHex(16))
		e.Seq = gen
		hist = append(hist, e)
	}
	if _, err := s.Create(ctx(t), key, record(key, HistoryLimit+1), hist); err != nil {
		t.Fatal(err)
	}
	got, err := s.cli.Get(ctx(t), s.historyDir(key), clientPrefix()...)
	if err != nil {
		t.Fatal(err)
	}
	if got.Count != HistoryLimit {
		t.Fatalf("Create of %d entries wrote %d, want the newest %d", HistoryLimit+1, got.Count, HistoryLimit)
	}
	if old, _ := s.cli.Get(ctx(t), s.historyKey(key, 1)); len(old.Kvs) != 0 {
		t.Fatalf("the oldest entry (seq 1) was written")
	}
}
