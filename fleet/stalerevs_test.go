package fleet

import "testing"

// staleRevs remembers per key the newest revision found superseded, and
// a base at or below it is read, not trusted (its doc): the very base a
// commit or refusal found superseded first of all, since the store's
// next Begin of the same ticket takes that base again, and trusted it
// goes to the nearest member, which may still show it (a member behind),
// for one more lost compare. A mark below the one held does not lower
// it. Before (mutants f11 and f12 of the fleet sweep's list: has's `rev
// <= r` -> `<`, mark's `rev > r` -> `<`), no test read the marks: f11
// trusted the marked base itself, f12 kept the oldest mark instead of the
// newest.
func TestStaleRevsHoldEveryBaseAtOrBelowTheNewestMark(t *testing.T) {
	var s staleRevs
	if s.has("k", 1) {
		t.Fatal("a key never marked is stale")
	}
	s.mark("k", 5)
	s.mark("k", 3) // an older base found superseded later: 5 stays
	for rev, want := range map[int64]bool{3: true, 4: true, 5: true, 6: false} {
		if got := s.has("k", rev); got != want {
			t.Errorf("has(k, %d) with marks 5 then 3 = %v, want %v", rev, got, want)
		}
	}
	s.mark("k", 7)
	if !s.has("k", 6) || !s.has("k", 7) || s.has("k", 8) {
		t.Errorf("has(k, 6/7/8) after a mark at 7 = %v/%v/%v, want true/true/false", s.has("k", 6), s.has("k", 7), s.has("k", 8))
	}
	if s.has("other", 1) {
		t.Error("a mark of k holds another key")
	}
}
