package store

import "testing"

// Base.same's doc: no transcript is still no transcript under a record of
// 0 bytes (the migration of an empty legacy current.jsonl, recorded as gen
// 1), and only under one of 0 bytes: a ticket resolved on an empty key is
// stale once the key holds bytes.
func TestAnEmptyBaseIsTheSameAsAZeroByteRecord(t *testing.T) {
	for _, c := range []struct {
		cur  Base
		same bool
	}{
		{Base{}, true},
		{Base{Gen: 1}, true},
		{Base{Gen: 1, Size: 1}, false},
		{Base{Gen: 2, Size: 48211}, false},
		{Base{File: &FileID{Dev: 1, Ino: 2}}, false},
	} {
		if got := (Base{}).same(c.cur); got != c.same {
			t.Errorf("an empty base against %+v: same %v, want %v", c.cur, got, c.same)
		}
	}
}
