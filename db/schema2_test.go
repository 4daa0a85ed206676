package db

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// Schema 2, the job contract (issue 11): history/ in sequence, refusals
// recorded, tickets found, pending's previous identity.

// viewBoth runs fn in a View of a writer (bbolt) and of a reader (the
// snapshot, or bbolt for a large file), closing both.
func viewBoth(t *testing.T, kd keyDir, fn func(t *testing.T, how string, tx *Tx) error) {
	t.Helper()
	for _, write := range []bool{true, false} {
		d := mustOpen(t, kd, write)
		how := map[bool]string{true: "writer", false: "reader"}[write]
		if d.snap != nil {
			how += " (snapshot)"
		}
		if err := d.View(func(tx *Tx) error { return fn(t, how, tx) }); err != nil {
			t.Fatalf("%s: %v", how, err)
		}
		d.Close()
	}
}

func TestAppendHistorySequence(t *testing.T) {
	kd := newKeyDir(t)
	d := mustOpen(t, kd, true)
	// A cold key's refusal, then promotions and refusals: the first entry
	// takes its gen as key, the rest follow in sequence.
	appends := []HistoryEntry{
		{Gen: 0, Outcome: "superseded", Ticket: "t-0", Run: "answered"},
		{Gen: 1, Ticket: "t-1", Run: "answered"},
		{Gen: 1, Outcome: "run-incomplete", Ticket: "t-2", Run: "unanswered", BaseGen: 1},
		{Gen: 2, Ticket: "t-3", Run: "errored", BaseGen: 1, Rewritten: true},
	}
	var want []HistoryEntry
	for i, e := range appends {
		var seq uint64
		err := d.Update(func(tx *Tx) (err error) { seq, err = tx.AppendHistory(e); return err })
		if err != nil {
			t.Fatal(err)
		}
		if seq != uint64(i) {
			t.Errorf("append %d stored under %d, want %d", i, seq, i)
		}
		e.Seq = seq
		want = append(want, e)
	}
	d.Close()
	viewBoth(t, kd, func(t *testing.T, how string, tx *Tx) error {
		h, err := tx.History(0)
		if err == nil && !reflect.DeepEqual(h, want) {
			t.Errorf("%s: history %+v, want %+v", how, h, want)
		}
		return err
	})

	// An empty ring takes the gen: a file that only ever saw promotions
	// keeps key == gen, as schema 1 did.
	kd2 := newKeyDir(t)
	d2 := mustOpen(t, kd2, true)
	for gen := uint64(7); gen < 10; gen++ {
		var seq uint64
		if err := d2.Update(func(tx *Tx) (err error) { seq, err = tx.AppendHistory(HistoryEntry{Gen: gen}); return err }); err != nil {
			t.Fatal(err)
		}
		if seq != gen {
			t.Errorf("promotion at gen %d stored under %d", gen, seq)
		}
	}
}

// The sequence never wraps: a highest key of 2^64-1 (damage) refuses the
// append and writes nothing.
func TestAppendHistorySequenceExhausted(t *testing.T) {
	kd := newKeyDir(t)
	d := mustOpen(t, kd, true)
	v, _ := encodeHistory(HistoryEntry{Gen: 3})
	if err := d.bdb.Update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte(bucketHistory)).Put(historyKey(math.MaxUint64), v)
	}); err != nil {
		t.Fatal(err)
	}
	err := d.Update(func(tx *Tx) error {
		if err := tx.PutVenue("lost"); err != nil {
			return err
		}
		_, err := tx.AppendHistory(HistoryEntry{Gen: 4})
		return err
	})
	wantErr(t, err, ErrDamaged)
	var s Sidecars
	d.View(func(tx *Tx) (err error) { s, err = tx.Sidecars(); return err })
	if s.Venue != nil {
		t.Errorf("the refused transaction wrote venue %q", *s.Venue)
	}
}

func TestFindTicket(t *testing.T) {
	kd := newKeyDir(t)
	d := mustOpen(t, kd, true)
	entries := []HistoryEntry{
		{Gen: 1, Ticket: "a", Job: "first"},
		{Gen: 1, Ticket: "b", Outcome: "superseded"},
		{Gen: 2, Ticket: "c"},
		{Gen: 3, Ticket: "a", Job: "again"},
		{Gen: 3, Ticket: "c", Outcome: "transcript-rewritten"},
		{Gen: 4}, // no ticket: a promotion schema 1 recorded, or an old store
	}
	err := d.Update(func(tx *Tx) error {
		for i := range entries {
			var err error
			if entries[i].Seq, err = tx.AppendHistory(entries[i]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	cases := []struct {
		id    string
		want  HistoryEntry
		found bool
	}{
		{"a", entries[3], true}, // the newest promotion by it
		{"c", entries[2], true}, // its refusal is newer, and does not count
		{"b", HistoryEntry{}, false},
		{"", HistoryEntry{}, false}, // "" never matches, though entries[5] has no ticket
		{"zz", HistoryEntry{}, false},
	}
	viewBoth(t, kd, func(t *testing.T, how string, tx *Tx) error {
		for _, c := range cases {
			e, found, err := tx.FindTicket(c.id)
			if err != nil {
				return err
			}
			if found != c.found || e != c.want {
				t.Errorf("%s: FindTicket(%q) = %+v, %v; want %+v, %v", how, c.id, e, found, c.want, c.found)
			}
		}
		return nil
	})
}

// An entry that does not decode on the way to a match is damage.
func TestFindTicketDamaged(t *testing.T) {
	kd := newKeyDir(t)
	d := mustOpen(t, kd, true)
	if err := d.Update(func(tx *Tx) error { return appended(tx.AppendHistory(HistoryEntry{Gen: 1, Ticket: "a"})) }); err != nil {
		t.Fatal(err)
	}
	if err := d.bdb.Update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte(bucketHistory)).Put(historyKey(2), []byte{0x81, 0xa1, 'o', 0x01}) // o is not a string
	}); err != nil {
		t.Fatal(err)
	}
	var inner error
	err := d.View(func(tx *Tx) error { _, _, inner = tx.FindTicket("a"); return nil })
	wantErr(t, err, ErrDamaged)
	if inner == nil || !strings.Contains(inner.Error(), "history/0000000000000002") {
		t.Errorf("error %v does not name the entry", inner)
	}
}

// Old records decode to the documented defaults: a schema 1 history value
// has no g (Gen is the key) and none of o, k, u, x, bg; a schema 1 pending
// has no v (Prev nil).
func TestSchema1RecordsDecode(t *testing.T) {
	v := mustMarshal(t, historyV1{At: 5, Resumed: true, Reason: "resumed", Bytes: 6, Chain: 2, Job: "j", TornTail: true})
	got, err := decodeHistory(historyKey(12), v)
	want := HistoryEntry{Seq: 12, Gen: 12, At: 5, Resumed: true, Reason: "resumed", Bytes: 6, Chain: 2, Job: "j", TornTail: true}
	if err != nil || got != want {
		t.Errorf("schema 1 entry decodes as %+v, %v; want %+v", got, err, want)
	}
	p, err := decodePending(mustMarshal(t, pendingV1{Tmp: "x", Size: 1, CRC32C: 2, Gen: 3}))
	if err != nil || !reflect.DeepEqual(p, Pending{Tmp: "x", Size: 1, CRC32C: 2, Gen: 3}) {
		t.Errorf("schema 1 pending decodes as %+v, %v", p, err)
	}
	// An explicit g wins over the key, 0 included (a refusal on a cold key).
	got, err = decodeHistory(historyKey(12), mustMarshal(t, map[string]any{"g": 0, "o": "superseded"}))
	if err != nil || got.Gen != 0 || got.Seq != 12 || got.Outcome != "superseded" {
		t.Errorf("entry with g 0 decodes as %+v, %v", got, err)
	}
}

func TestSchema2DecodeRejects(t *testing.T) {
	for name, b := range map[string][]byte{
		"outcome int":      mustMarshal(t, map[string]any{"o": 1}),
		"ticket bool":      mustMarshal(t, map[string]any{"k": true}),
		"run array":        mustMarshal(t, map[string]any{"u": []int{1}}),
		"rewritten string": mustMarshal(t, map[string]any{"x": "yes"}),
		"base gen string":  mustMarshal(t, map[string]any{"bg": "3"}),
		"gen string":       mustMarshal(t, map[string]any{"g": "3"}),
	} {
		if e, err := decodeHistory(historyKey(1), b); err == nil {
			t.Errorf("history %s (% x) decoded as %+v", name, b, e)
		}
	}
	for name, b := range map[string][]byte{
		"prev array":    mustMarshal(t, map[string]any{"v": []any{1, 2, 3, 4}}),
		"prev string":   mustMarshal(t, map[string]any{"v": "g"}),
		"prev bad gen":  mustMarshal(t, map[string]any{"v": map[string]any{"g": "x"}}),
		"prev trailing": append(mustMarshal(t, map[string]any{"t": "x"})[:0:0], 0x81, 0xa1, 'v', 0x81, 0xa1, 'g'),
	} {
		if p, err := decodePending(b); err == nil {
			t.Errorf("pending %s (% x) decoded as %+v", name, b, p)
		}
	}
}

// Pending.Prev goes through a file and back, for writers and readers.
func TestPendingPrev(t *testing.T) {
	kd := newKeyDir(t)
	d := mustOpen(t, kd, true)
	want := &Pending{Tmp: ".current.jsonl.tmp-9", Size: 9, CRC32C: 8, Gen: 7, Prev: &Transcript{Gen: 6, Size: 5, CRC32C: 4, PromotedAt: 3}}
	if err := d.Update(func(tx *Tx) error { return tx.PutPending(want) }); err != nil {
		t.Fatal(err)
	}
	d.Close()
	viewBoth(t, kd, func(t *testing.T, how string, tx *Tx) error {
		s, err := tx.Sidecars()
		if err == nil && !reflect.DeepEqual(s.Pending, want) {
			t.Errorf("%s: pending %+v (prev %+v), want %+v (prev %+v)", how, s.Pending, s.Pending.Prev, want, want.Prev)
		}
		return err
	})
}

// A schema 2 file with every new field set is refused by nothing in this
// binary: readers of a small and of a large file, writers, bbolt's check.
func TestSchema2FileOpens(t *testing.T) {
	for _, large := range []bool{false, true} {
		kd := newKeyDir(t)
		d := mustOpen(t, kd, true)
		populate(t, d, 3)
		entry := HistoryEntry{Gen: 8, At: 1, Reason: "resumed", Outcome: "superseded", Ticket: "t", Run: "unchanged", Rewritten: true, BaseGen: 7}
		pend := &Pending{Tmp: "x", Gen: 8, Prev: &Transcript{Gen: 7}}
		err := d.Update(func(tx *Tx) (err error) {
			if large { // past the snapshot limit: read through bbolt
				big := strings.Repeat("v", snapshotLimit*3/5) // two records, each at most MaxRecordBytes
				if err := errors.Join(tx.PutPiVersion(big), tx.PutVenue(big)); err != nil {
					return err
				}
			}
			if err := tx.PutPending(pend); err != nil {
				return err
			}
			entry.Seq, err = tx.AppendHistory(entry)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		d.Close()
		viewBoth(t, kd, func(t *testing.T, how string, tx *Tx) error {
			if strings.HasPrefix(how, "reader") && strings.Contains(how, "snapshot") == large {
				t.Errorf("large=%v read by the %s", large, how)
			}
			m, err := tx.Meta()
			if err != nil {
				return err
			}
			s, err := tx.Sidecars()
			if err != nil {
				return err
			}
			h, err := tx.History(1)
			if err != nil {
				return err
			}
			if m.Schema != 2 || !reflect.DeepEqual(s.Pending, pend) || len(h) != 1 || h[0] != entry {
				t.Errorf("large=%v %s: schema %d, pending %+v, history %+v", large, how, m.Schema, s.Pending, h)
			}
			return nil
		})
	}
}
