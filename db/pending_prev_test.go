package db

import "testing"

// A pending record's Prev is decoded as strictly as a record of its own:
// a value there that is not a transcript record is damage, never read as
// "no previous generation", one byte long or more.
func TestPendingPrevThatIsNoRecordIsDamage(t *testing.T) {
	for _, prev := range []any{1, "x", []int{1, 2}} {
		b := mustMarshal(t, map[string]any{"t": "tmp", "s": 1, "g": 2, "v": prev})
		if p, err := decodePending(b); err == nil {
			t.Errorf("Prev %#v decoded as %+v, want an error", prev, p)
		}
	}
}
