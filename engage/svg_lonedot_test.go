package engage

import (
	"bytes"
	"fmt"
	"regexp"
	"testing"
)

// An overview too dense for a dot a reading draws its readings as lines
// and puts a dot only on a reading with no known one on either side, which
// a line cannot show: not on the ends of every stretch. Here 200 requests
// (the overview too dense for a dot each), pi's estimate known at all but
// 101 and 103: one dot, at 102.
func TestADenseOverviewDotsOnlyALoneReading(t *testing.T) {
	rp := &Replay{Window: 1000, Reserve: 100, Threshold: 900, PrunedRatio: 1}
	for n := 1; n <= 200; n++ {
		r := Row{Request: Request{N: n, Entry: fmt.Sprint("a", n), Before: Estimate{Tokens: int64(n)}}, Stateless: n == 2}
		if n == 101 || n == 103 {
			r.Before = Estimate{Unknown: true}
		}
		if n == 1 {
			r.Event = Start
		}
		rp.Rows = append(rp.Rows, r)
	}
	b := writeSVG(t, rp, "lone", nil)
	over, _, found := bytes.Cut(b, []byte("detail 1:"))
	if !found {
		t.Fatalf("no detail panel: the overview of 200 requests has a dot a reading, and the test proves nothing")
	}
	groups := regexp.MustCompile(`<g class="estimate-dots"[^>]*>(.*?)</g>`).FindAllSubmatch(over, -1)
	var circles int
	for _, g := range groups {
		circles += bytes.Count(g[1], []byte("<circle"))
	}
	if circles != 1 {
		t.Errorf("the dense overview has %d dots on pi's estimate (%d groups); want 1, on the lone reading at 102", circles, len(groups))
	}
}
