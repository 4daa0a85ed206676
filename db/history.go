package db

import (
	"encoding/binary"
	"fmt"
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
		b, err := tx.bucket(bucketHistory)
		if err != nil {
			return err
		}
		seq = e.Gen
		if k, _ := b.Cursor().Last(); k != nil {
			if len(k) != 8 {
				return damaged("%s/%x: key is %d bytes, want 8", bucketHistory, k, len(k))
			}
			if seq = binary.BigEndian.Uint64(k) + 1; seq == 0 {
				return damaged("%s/%x: no sequence number follows it", bucketHistory, k)
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

// FindTicket returns the newest entry of history/ that records a promotion
// (Outcome "") by the ticket id, and whether there is one. No entry matches
// the id "". Only the last HistoryLimit entries are kept, so a ticket that
// promoted longer ago is no longer found.
func (tx *Tx) FindTicket(id string) (HistoryEntry, bool, error) {
	var found HistoryEntry
	ok := false
	err := tx.do("read", false, func() error {
		if id == "" {
			return nil
		}
		b, err := tx.view(bucketHistory)
		if b == nil {
			return err
		}
		return descendHistory(b, func(e HistoryEntry) bool {
			found, ok = e, e.Outcome == "" && e.Ticket == id
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
		if v == nil {
			err = damaged("%s/%x is a bucket", bucketHistory, k)
			return false
		}
		var e HistoryEntry
		if e, err = decodeHistory(k, v); err != nil {
			err = damagedBy(fmt.Sprintf("%s/%x", bucketHistory, k), err)
			return false
		}
		return fn(e)
	})
	return err
}
