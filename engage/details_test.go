package engage

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

// stretches returns a replay of k stretches of pruned requests, one in
// every ten requests, so that no two padded stretches touch: the fourth is
// pruned under the stateless check, and the sticky rule prunes it, the
// fifth, both or neither at random, so the stretches weigh 2 to 4
// switches, with many ties.
func stretches(k int, rng *rand.Rand) *Replay {
	rp := &Replay{Window: 1000, Reserve: 100, Threshold: 900, PrunedRatio: 1}
	for n := 1; n <= 10*k; n++ {
		r := Row{Request: Request{N: n}}
		switch n % 10 {
		case 4:
			r.Stateless = true
			r.Sticky = rng.IntN(3) == 0
		case 5:
			r.Sticky = rng.IntN(2) == 0
		}
		if n == 1 {
			r.Event = Start
		}
		rp.Rows = append(rp.Rows, r)
	}
	return rp
}

// The detail panels are the three stretches with the most switches, the
// earlier on a tie, in request order (the WriteSVG doc): against a
// reference that sorts every stretch, on replays with many ties.
func TestDetailsKeepTheHeaviestStretches(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 200; trial++ {
		rp := stretches(1+rng.IntN(12), rng)
		type cand struct {
			s    span
			w, i int
		}
		var all []cand
		for b := 0; b < len(rp.Rows)/10; b++ {
			c := cand{s: span{10*b + 1, 10*b + 7}, i: b}
			if rp.Rows[10*b+4].Sticky { // request 10b+5
				c.s.to++
			}
			for n := c.s.from; n <= c.s.to; n++ {
				c.w += switches(rp, n, func(r *Row) bool { return r.Stateless }) + switches(rp, n, func(r *Row) bool { return r.Sticky })
			}
			all = append(all, c)
		}
		slices.SortStableFunc(all, func(a, b cand) int { return cmp.Compare(b.w, a.w) })
		all = all[:min(len(all), maxDetails)]
		slices.SortFunc(all, func(a, b cand) int { return cmp.Compare(a.i, b.i) })
		var want []span
		for _, c := range all {
			want = append(want, c.s)
		}
		if got := details(rp); !slices.Equal(got, want) {
			t.Fatalf("trial %d: details %v, want %v", trial, got, want)
		}
	}
}
