package engage

import (
	"strings"
	"testing"
)

// A request's estimate is what pi reports for the file as it stood when
// the request was written: where a line pi's load throws on (a null line;
// in a version 1 file a number, a string or a boolean) lies before the
// request, pi cannot load that file and has no reading, as Final has none
// for the whole file. Requests before the line keep pi's reading. pi
// 0.58.3's answers by tools/pi-end-usage.mjs on each file cut before the
// request: 2, then a TypeError, for the first two files; 2 and 102 for the
// third, whose null line follows its last request (Final: a TypeError); a
// TypeError at every request of the last two, whose header's version pi's
// comparison cannot convert (the header is in every cut).
// Before, every request had a reading, pi's on the file with those lines
// taken out (102 for the second request of the first two).
func TestReplayHasNoEstimateWherePiCannotLoadTheFileBeforeTheRequest(t *testing.T) {
	const (
		h3 = `{"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/w"}`
		u  = `{"type":"message","id":"u1","parentId":null,"message":{"role":"user","content":"hello"}}`
		a  = `{"type":"message","id":"a1","parentId":"u1","message":{"role":"assistant","content":[],"provider":"p","model":"m","usage":{"totalTokens":100},"stopReason":"stop"}}`
		uu = `{"type":"message","id":"u2","parentId":"a1","message":{"role":"user","content":"again"}}`
		aa = `{"type":"message","id":"a2","parentId":"u2","message":{"role":"assistant","content":[],"provider":"p","model":"m","usage":{"totalTokens":200},"stopReason":"stop"}}`
		h1 = `{"type":"session","id":"s","timestamp":"t","cwd":"/w"}`
		u1 = `{"type":"message","message":{"role":"user","content":"hello"}}`
		a1 = `{"type":"message","message":{"role":"assistant","content":[],"provider":"p","model":"m","usage":{"totalTokens":100},"stopReason":"stop"}}`
		u2 = `{"type":"message","message":{"role":"user","content":"again"}}`
		a2 = `{"type":"message","message":{"role":"assistant","content":[],"provider":"p","model":"m","usage":{"totalTokens":200},"stopReason":"stop"}}`
		// A header version whose comparison throws: an object with its
		// own "toString" member, alone or in an array (pi 0.58.3: "Cannot
		// convert object to primitive value" on every cut of the file).
		hs = `{"type":"session","version":{"toString":1},"id":"s","timestamp":"t","cwd":"/w"}`
		ha = `{"type":"session","version":[3,{"toString":1}],"id":"s","timestamp":"t","cwd":"/w"}`
		// A failed answer and its retry: the retry's estimate leaves the
		// failed answer out (Estimator.Retry). pi: 2 before the failed
		// answer; a TypeError before the retry, past the null line.
		fe = `{"type":"message","id":"e1","parentId":"u1","message":{"role":"assistant","content":[],"provider":"p","model":"m","usage":{"totalTokens":0},"stopReason":"error"}}`
		fr = `{"type":"message","id":"r1","parentId":"e1","message":{"role":"assistant","content":[],"provider":"p","model":"m","usage":{"totalTokens":100},"stopReason":"stop"}}`
	)
	for _, c := range []struct {
		name  string
		lines []string
		want  []int64 // per request; -1: no reading
	}{
		{"a null line between the requests", []string{h3, u, a, "null", uu, aa}, []int64{2, -1}},
		{"a number between the requests of a version 1 file", []string{h1, u1, a1, "5", u2, a2}, []int64{2, -1}},
		{"a null line after the last request", []string{h3, u, a, uu, aa, "null"}, []int64{2, 102}},
		{"a header version with its own toString", []string{hs, u, a, uu, aa}, []int64{-1, -1}},
		{"a header version that is an array holding one", []string{ha, u, a, uu, aa}, []int64{-1, -1}},
		{"a null line between a failed answer and its retry", []string{h3, u, fe, "null", fr}, []int64{2, -1}},
		{"a null line after each request", []string{h3, u, a, "null", uu, aa, "null"}, []int64{2, -1}},
	} {
		tr, err := Read(strings.NewReader(strings.Join(c.lines, "\n") + "\n"))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		rp, err := tr.Replay(DefaultOptions())
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if len(rp.Rows) != len(c.want) {
			t.Fatalf("%s: %d requests, want %d", c.name, len(rp.Rows), len(c.want))
		}
		for i, row := range rp.Rows {
			for _, r := range []struct {
				what string
				got  Reading
			}{{"estimate", row.Before.Reading()}, {"stateless reading", row.StatelessReading}, {"sticky reading", row.StickyReading}} {
				switch want := c.want[i]; {
				case want < 0 && r.got.Known:
					t.Errorf("%s: request %d's %s is %d, want none (pi cannot load the file before it)", c.name, i+1, r.what, r.got.Tokens)
				case want >= 0 && (!r.got.Known || r.got.Tokens != want):
					t.Errorf("%s: request %d's %s is %d (known %v), want pi's %d", c.name, i+1, r.what, r.got.Tokens, r.got.Known, want)
				}
			}
		}
		if tr.Final.Reading().Known {
			t.Errorf("%s: Final has a reading, where pi cannot load the file", c.name)
		}
	}
}
