package db

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
)

// AppendHistory appends e to history/ and returns the sequence number it
// is stored under, its key: one above the highest key, or e.Gen in an empty
// bucket, so that a file that has only seen promotions keeps key == gen as
// schema 1 wrote it. e.Seq is ignored. history/ is then trimmed to the
// HistoryLimit highest keys.
func (tx *Tx) AppendHistory(e HistoryEntry) (uint64, error) {
	v, encErr := encodeHistory(e)
	var seq uint64
	err := tx.do("append", true, func() error {
		if encErr != nil {
			return fmt.Errorf("%s/: %w", bucketHistory, encErr)
		}
		if err := recordSize(v); err != nil {
			return fmt.Errorf("%s/: %w", bucketHistory, err)
		}
		b, err := tx.bucket(bucketHistory)
		if err != nil {
			return err
		}
		seq = e.Gen
		if k, _ := b.Cursor().Last(); k != nil {
			// binary.BigEndian.Uint64 panics on a shorter key, and a longer
			// one is no sequence number this package wrote.
			if len(k) != 8 {
				return damaged("%s/%s: key is %d bytes, want 8", bucketHistory, keyHex(k), len(k))
			}
			if seq, err = nextSeq(binary.BigEndian.Uint64(k)); err != nil {
				return err
			}
		}
		// Keys only ever append, so a split at bbolt's default of half a
		// page leaves every full leaf half empty for good. Packed, 100
		// promotions leave meta.db at 20 KiB on disk instead of 24-28
		// (internal/bench BenchmarkDiskPerKey).
		b.FillPercent = 1.0
		if err := b.Put(historyKey(seq), v); err != nil {
			return fmt.Errorf("%s/%d: %w", bucketHistory, seq, err)
		}
		// The keys to trim are gathered first and deleted after the walk:
		// a Delete under a live bbolt cursor can move it on by one, so the
		// walk would skip an entry (etcd-io/bbolt#146, and the note on
		// deleting during iteration in bbolt's README).
		var stale [][]byte
		c := b.Cursor()
		n := 0
		for k, _ := c.Last(); k != nil; k, _ = c.Prev() {
			if n++; n > HistoryLimit {
				stale = append(stale, slices.Clone(k)) // k dies with the cursor's page
			}
		}
		for _, k := range stale {
			if err := b.Delete(k); err != nil {
				return fmt.Errorf("%s/%x: %w", bucketHistory, k, err)
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return seq, nil
}

// nextSeq is the sequence number after last, the newest key of history/.
// None follows the last uint64: wrapping to 0 would store the entry first
// in key order, where AppendHistory's trim deletes it at once (the append
// would succeed and record nothing). A key whose newest entry sits there
// takes no write (every promotion, refusal and reap appends one) until its
// history is numbered again (RenumberHistory, which check --repair runs):
// the error says so, and HistoryFull lets check report it.
func nextSeq(last uint64) (uint64, error) {
	if last == math.MaxUint64 {
		return 0, damaged("%s/%016x: the last sequence number, which no entry can follow: no promotion, refusal or reap of the key can be recorded until its history is numbered again (check --repair)", bucketHistory, last)
	}
	return last + 1, nil
}

// HistoryFull returns the error AppendHistory would return for want of a
// sequence number (see nextSeq), nil where an entry can be appended, or
// the read's error.
func (tx *Tx) HistoryFull() error {
	hs, err := tx.History(1)
	if err != nil || len(hs) == 0 {
		return err
	}
	_, err = nextSeq(hs[0].Seq)
	return err
}

// DropUndecodableHistory removes the entries of history/ that do not
// decode (a value that is no entry, a key not 8 bytes long, a nested
// bucket), each of which fails every read of the history, and so every
// write of the key, and returns them as "<key in hex> (<n> bytes)", in
// key order; none, it does nothing. The entries that decode stay as they
// are, under their keys, and nothing else of the file changes: the key's
// record and stamps stay. The caller commits it whole or not at all.
func (tx *Tx) DropUndecodableHistory() ([]string, error) {
	var dropped []string
	err := tx.do("drop history", true, func() error {
		b, err := tx.bucket(bucketHistory)
		if b == nil {
			return err
		}
		type bad struct {
			k      []byte
			bucket bool
		}
		var bads []bad
		c := b.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			switch _, err := decodeHistory(k, v); {
			case v == nil:
				bads = append(bads, bad{slices.Clone(k), true})
				dropped = append(dropped, keyHex(k)+" (a bucket)")
			case err != nil:
				bads = append(bads, bad{slices.Clone(k), false})
				dropped = append(dropped, fmt.Sprintf("%s (%d bytes)", keyHex(k), len(v)))
			}
		}
		for _, e := range bads {
			del := b.Delete
			if e.bucket {
				del = b.DeleteBucket
			}
			if err := del(e.k); err != nil {
				return fmt.Errorf("%s/%s: %w", bucketHistory, keyHex(e.k), err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return dropped, nil
}

// Renumbered is what RenumberHistory did: how many entries it stored
// again under 1, 2, ... (0: nothing done), and how many older ones,
// beyond the ring of HistoryLimit, it dropped.
type Renumbered struct {
	Kept, Dropped int
}

// RenumberHistory settles what HistoryFull reports: where history/'s newest
// entry holds the last sequence number, it stores the newest HistoryLimit
// entries again under the keys 1, 2, ... in the order they had, each entry
// as it was (an entry whose value carries no gen, as schema 1 wrote them,
// gets its old key written in as its gen), and drops every older one, as
// AppendHistory's trim would have: a history holds more only in a damaged
// or hostile file, and the renumber then costs the ring's entries and one
// bucket's removal, not a rewrite of whatever the file holds. Nothing else
// of the file changes, so the key's record and stamps stay as they are.
// Anywhere else it does nothing and returns the zero Renumbered. The caller
// commits the whole rewrite or none of it, as one transaction.
func (tx *Tx) RenumberHistory() (Renumbered, error) {
	var r Renumbered
	err := tx.do("renumber history", true, func() error {
		b, err := tx.bucket(bucketHistory)
		if b == nil {
			return err
		}
		if k, _ := b.Cursor().Last(); k == nil || len(k) != 8 || binary.BigEndian.Uint64(k) != math.MaxUint64 {
			return nil
		}
		type kv struct{ k, v []byte }
		var ring []kv // newest first
		c := b.Cursor()
		for k, v := c.Last(); k != nil && len(ring) < HistoryLimit; k, v = c.Prev() {
			if v == nil {
				return damaged("%s/%s is a bucket", bucketHistory, keyHex(k))
			}
			ring = append(ring, kv{slices.Clone(k), slices.Clone(v)})
		}
		slices.Reverse(ring)
		for k, _ := c.First(); k != nil && !bytes.Equal(k, ring[0].k); k, _ = c.Next() {
			r.Dropped++
		}
		// The bucket goes whole: its pages are freed without a Delete per
		// key, which for a million entries took most of a minute.
		if err := tx.tx.DeleteBucket([]byte(bucketHistory)); err != nil {
			return fmt.Errorf("%s/: %w", bucketHistory, err)
		}
		if b, err = tx.tx.CreateBucket([]byte(bucketHistory)); err != nil {
			return fmt.Errorf("%s/: %w", bucketHistory, err)
		}
		b.FillPercent = 1.0 // as AppendHistory packs it
		for i, e := range ring {
			h, err := decodeHistory(e.k, e.v)
			if err != nil {
				return damagedBy(bucketHistory+"/"+keyHex(e.k), err)
			}
			k := historyKey(uint64(i) + 1)
			v := e.v
			// A value without a gen takes it from its key: written under
			// a new key as it is, it would name another generation.
			if again, err := decodeHistory(k, v); err != nil || again.Gen != h.Gen {
				if v, err = encodeHistory(h); err != nil {
					return fmt.Errorf("%s/: %w", bucketHistory, err)
				}
			}
			// Its gen added, a value a record long would be longer.
			if err := recordSize(v); err != nil {
				return fmt.Errorf("%s/%d: %w", bucketHistory, i+1, err)
			}
			if err := b.Put(k, v); err != nil {
				return fmt.Errorf("%s/%d: %w", bucketHistory, i+1, err)
			}
		}
		r.Kept = len(ring)
		return nil
	})
	if err != nil {
		return Renumbered{}, err
	}
	return r, nil
}

// FindTicket returns the newest entry of history/ that records a promotion
// (Outcome "") by the ticket id, and whether there is one. No entry matches
// the id "". Only the last HistoryLimit entries are kept, so a ticket that
// promoted longer ago is no longer found.
func (tx *Tx) FindTicket(id string) (HistoryEntry, bool, error) {
	var found HistoryEntry
	ok := false
	err := tx.do("read", false, func() error {
		// No entry is by "" (RecordedBy): nothing to read.
		if id == "" {
			return nil
		}
		b, err := tx.view(bucketHistory)
		if b == nil {
			return err
		}
		// Newest first: a retry follows its promotion within seconds, so
		// the walk usually stops at the first entry or the second.
		return descendHistory(b, func(e HistoryEntry) bool {
			found, ok = e, e.RecordedBy(id, "")
			return !ok
		})
	})
	if err != nil || !ok {
		return HistoryEntry{}, false, err
	}
	return found, true, nil
}

// History returns the last n entries of history/, oldest first; n <= 0
// returns all of them.
func (tx *Tx) History(n int) ([]HistoryEntry, error) {
	var out []HistoryEntry
	err := tx.do("read", false, func() error {
		b, err := tx.view(bucketHistory)
		if b == nil {
			return err
		}
		out, err = readHistory(b, n)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// readHistory decodes the last n entries of b (all for n <= 0), oldest
// first.
func readHistory(b bucketView, n int) ([]HistoryEntry, error) {
	// Walked newest first, so that the last n entries cost n decodes and
	// not the whole ring's (dump --history N asks for N of up to 64).
	var out []HistoryEntry
	err := descendHistory(b, func(e HistoryEntry) bool {
		out = append(out, e)
		return n <= 0 || len(out) < n
	})
	if err != nil {
		return nil, err
	}
	slices.Reverse(out)
	return out, nil
}

// descendHistory decodes the entries of b newest first, until fn returns
// false or an entry does not decode.
func descendHistory(b bucketView, fn func(HistoryEntry) (more bool)) error {
	var err error
	b.descend(func(k, v []byte) bool {
		// Only AppendHistory writes here, and only values: a nested bucket
		// is damage, where sidecars/ can only read one as an absent key.
		if v == nil {
			err = damaged("%s/%s is a bucket", bucketHistory, keyHex(k))
			return false
		}
		var e HistoryEntry
		if e, err = decodeHistory(k, v); err != nil {
			err = damagedBy(bucketHistory+"/"+keyHex(k), err)
			return false
		}
		return fn(e)
	})
	return err
}
