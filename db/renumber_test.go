package db

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// RenumberHistory stores a history whose newest entry holds the last
// sequence number again under 1, 2, ..., in its order, each entry as it
// was: a value that carries its gen keeps its bytes, one without (as
// schema 1 wrote them) gets its old key as its gen. Anywhere else it does
// nothing. Afterwards the history takes entries again.
func TestRenumberHistoryKeepsEveryEntry(t *testing.T) {
	kd := newKeyDir(t)
	d := mustOpen(t, kd, true)
	err := d.Update(func(tx *Tx) error {
		// In an empty history an entry's key is its generation.
		if _, err := tx.AppendHistory(HistoryEntry{Gen: math.MaxUint64 - 2, Reason: "resumed", Job: "a"}); err != nil {
			return err
		}
		if err := tx.PutVenue("local"); err != nil {
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// A schema 1 entry, with no gen, then one more.
	noGen, err := marshal(map[string]any{"a": int64(7), "w": "absent"})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.bdb.Update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte(bucketHistory)).Put(historyKey(math.MaxUint64-1), noGen)
	}); err != nil {
		t.Fatal(err)
	}
	if err := d.Update(func(tx *Tx) error {
		_, err := tx.AppendHistory(HistoryEntry{Gen: 5, Outcome: "superseded", Ticket: "t"})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var before []HistoryEntry
	raw := map[uint64][]byte{}
	read := func() []HistoryEntry {
		var h []HistoryEntry
		if err := d.View(func(tx *Tx) (err error) { h, err = tx.History(0); return err }); err != nil {
			t.Fatal(err)
		}
		d.bdb.View(func(tx *bolt.Tx) error {
			return tx.Bucket([]byte(bucketHistory)).ForEach(func(k, v []byte) error {
				raw[uint64(len(raw))] = bytes.Clone(v)
				return nil
			})
		})
		return h
	}
	before = read()
	rawBefore := raw
	raw = map[uint64][]byte{}
	if len(before) != 3 || before[2].Seq != math.MaxUint64 || before[1].Gen != math.MaxUint64-1 {
		t.Fatalf("fixture: %+v", before)
	}

	var did Renumbered
	if err := d.Update(func(tx *Tx) (err error) { did, err = tx.RenumberHistory(); return err }); err != nil || did != (Renumbered{Kept: 3}) {
		t.Fatalf("RenumberHistory = %+v, %v; want the 3 entries kept", did, err)
	}
	after := read()
	if len(after) != len(before) {
		t.Fatalf("after: %+v; before: %+v", after, before)
	}
	for i := range before {
		want := before[i]
		want.Seq = uint64(i) + 1
		if !reflect.DeepEqual(after[i], want) {
			t.Fatalf("entry %d = %+v, want %+v", i, after[i], want)
		}
	}
	if !bytes.Equal(raw[0], rawBefore[0]) || !bytes.Equal(raw[2], rawBefore[2]) || bytes.Equal(raw[1], rawBefore[1]) {
		t.Fatal("the values with a gen were rewritten, or the one without kept as it was")
	}
	var sc Sidecars
	if err := d.View(func(tx *Tx) (err error) { sc, err = tx.Sidecars(); return err }); err != nil || sc.Venue == nil || *sc.Venue != "local" {
		t.Fatalf("sidecars after = %+v, %v; want the venue kept", sc, err)
	}

	if err := d.Update(func(tx *Tx) (err error) { did, err = tx.RenumberHistory(); return err }); err != nil || did != (Renumbered{}) {
		t.Fatalf("RenumberHistory again = %+v, %v; want nothing done", did, err)
	}
	var seq uint64
	if err := d.Update(func(tx *Tx) (err error) { seq, err = tx.AppendHistory(HistoryEntry{Gen: 6}); return err }); err != nil || seq != 4 {
		t.Fatalf("append after = %d, %v; want seq 4", seq, err)
	}
}

// A history at the last sequence number that holds more than the ring
// (a hostile or damaged file: AppendHistory keeps HistoryLimit) is
// renumbered to the newest HistoryLimit entries, as the ring's next trim
// would leave it: the older ones are dropped, so the renumber's cost is
// the ring's, not the file's. Before, every entry was read into memory
// and written again (a million in about a minute and a gigabyte).
func TestRenumberHistoryKeepsTheRingOnly(t *testing.T) {
	kd := newKeyDir(t)
	d := mustOpen(t, kd, true)
	const n = HistoryLimit + 500
	if err := d.bdb.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(bucketHistory))
		for i := range n {
			v, err := encodeHistory(HistoryEntry{Gen: uint64(i + 1), Job: fmt.Sprint("job-", i)})
			if err != nil {
				return err
			}
			if err := b.Put(historyKey(math.MaxUint64-uint64(n-1-i)), v); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var did Renumbered
	if err := d.Update(func(tx *Tx) (err error) { did, err = tx.RenumberHistory(); return err }); err != nil || did != (Renumbered{Kept: HistoryLimit, Dropped: n - HistoryLimit}) {
		t.Fatalf("RenumberHistory = %+v, %v; want %d kept, %d dropped", did, err, HistoryLimit, n-HistoryLimit)
	}
	var h []HistoryEntry
	if err := d.View(func(tx *Tx) (err error) { h, err = tx.History(0); return err }); err != nil {
		t.Fatal(err)
	}
	if len(h) != HistoryLimit {
		t.Fatalf("%d entries after the renumber, want the ring's %d", len(h), HistoryLimit)
	}
	for i, e := range h {
		if want := uint64(n - HistoryLimit + i + 1); e.Seq != uint64(i+1) || e.Gen != want {
			t.Fatalf("entry %d: seq %d gen %d; want seq %d gen %d (the newest, in order)", i, e.Seq, e.Gen, i+1, want)
		}
	}
}

// A schema 1 entry (no gen) a record long, which its renumbering would
// write with a gen and so past MaxRecordBytes, fails the renumbering
// (ErrRecordTooLarge): nothing changes, and the file still opens. Before,
// the longer value was written, and every later open refused the file as
// damaged.
func TestRenumberingWritesNoRecordPastMaxRecordBytes(t *testing.T) {
	kd := newKeyDir(t)
	d := mustOpen(t, kd, true)
	populate(t, d, 1)
	entry := func(n int) []byte {
		v, err := marshal(map[string]any{"a": int64(7), "w": "absent", "j": strings.Repeat("j", n)})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	noGen := entry(MaxRecordBytes - (len(entry(1<<17)) - 1<<17))
	if len(noGen) != MaxRecordBytes {
		t.Fatalf("fixture: an entry of %d bytes, want %d", len(noGen), MaxRecordBytes)
	}
	if err := d.bdb.Update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte(bucketHistory)).Put(historyKey(math.MaxUint64), noGen)
	}); err != nil {
		t.Fatal(err)
	}
	var did Renumbered
	if err := d.Update(func(tx *Tx) (err error) { did, err = tx.RenumberHistory(); return err }); !errors.Is(err, ErrRecordTooLarge) {
		t.Fatalf("RenumberHistory = %+v, %v; want ErrRecordTooLarge", did, err)
	}
	d.Close()
	d = mustOpen(t, kd, true)
	defer d.Close()
	if err := d.View(func(tx *Tx) error {
		h, err := tx.History(0)
		if err == nil && (len(h) == 0 || h[len(h)-1].Seq != math.MaxUint64) {
			t.Errorf("after the failed renumbering: %d entries, the newest at %d; want it at the last sequence number still", len(h), h[len(h)-1].Seq)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
}
