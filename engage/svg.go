package engage

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
)

// The chart has one fixed size so that every chart reads the same at 100%
// zoom and a golden file stays comparable; 1200 px is the width of a
// docs page on a laptop screen.
const (
	svgWidth  = 1200
	svgHeight = 800

	svgLeft  = 84   // left edge of the overview plot: room for the y labels and band names
	svgRight = 1176 // right edge of every plot

	bandHeight = 14 // one policy's band of pruned requests
	bandGap    = 5
	minSlot    = 12 // px per request under which the overview gets detail panels
	maxDetails = 3  // detail panels under the overview
	detailPad  = 3  // requests shown on each side of a detail's pruned requests
)

// Colours: one per policy, kept for its line, its band and its legend key.
const (
	colStateless = "#d95f02"
	colSticky    = "#1b6ac9"
	colRecorded  = "#333"
	colModelBase = "#c4c4c4" // the recorded estimate under a modelled replay
	colThreshold = "#c0182a"
)

// WriteSVG writes the replay as one SVG chart of fixed size: the estimate
// before every request against the threshold, each policy's pruned
// requests shaded in its own band below the plot, its prefix switches
// marked on that band, the resets (start, compaction) and model changes as
// dashed rules, and the summary figures of WriteTable in the legend; prices
// may be nil. When
// the requests are too many to tell apart (under 12 px each), a detail panel
// under the overview shows each stretch of pruned requests (at most three,
// the ones with the most switches) at a readable scale. name is printed in
// the title; it and every entry id go through the table's quoting and then
// XML escaping, so no text from the transcript or the command line can
// inject markup or a control character.
//
// The output is a function of the replay, name and prices alone: the same
// replay writes the same bytes. WriteSVG only reads rp; on a write error,
// w may hold part of the chart. Tests and readers may rely on this
// structure of the overview (the detail panels repeat it under classes, not
// ids):
//
//   - path#estimate holds one absolute vertex (an M or L command) per
//     request with a known recorded estimate, in request order; an unknown
//     estimate starts a new subpath (a gap, never a zero), so a point with
//     no known neighbour is a lone M, which a dot marks. A modelled replay
//     adds path#stateless-estimate and path#sticky-estimate, the readings
//     each policy decided on, built the same way.
//   - path#axes is "M x0 top V bottom H x1": request n's slot is the n-th of
//     equal slots from x0 to x1, and tokens run from 0 at bottom up, on
//     the scale line#threshold marks at the threshold.
//   - g#stateless-pruned and g#sticky-pruned hold one rect per pruned
//     request; g#stateless-switches and g#sticky-switches one path per
//     prefix switch; g#resets one line per request that carries a reset or
//     goes to another model.
func (rp *Replay) WriteSVG(w io.Writer, name string, prices *Prices) error {
	c := &chart{rp: rp, w: bufio.NewWriter(w)}
	c.ymax, c.ystep = yAxis(rp)
	c.header(name)
	over := &panel{c: c, from: 1, to: max(len(rp.Rows), 1), x0: svgLeft, x1: svgRight, y0: 100, y1: 560, overview: true, dots: true}
	if over.slot() < minSlot {
		// Too dense to see one request: details under a shorter overview.
		over.spans, over.y1, over.dots = details(rp), 330, false
	}
	over.draw()
	if !over.dots {
		c.detailRow(over.spans, 420)
	}
	c.legend(prices, 650)
	c.printf("</svg>\n")
	return c.w.Flush()
}

type chart struct {
	rp          *Replay
	w           *bufio.Writer
	ymax, ystep float64
}

func (c *chart) printf(format string, args ...any) { fmt.Fprintf(c.w, format, args...) }

// text writes one <text> element; attrs is markup the caller wrote, s is
// text from anywhere, quoted if unprintable and then XML-escaped.
func (c *chart) text(x, y float64, attrs, s string) {
	c.printf(`<text x="%s" y="%s"%s>`, num(x), num(y), attrs)
	xml.EscapeText(c.w, []byte(printable(s)))
	c.printf("</text>\n")
}

// title writes a <title> child, the tooltip of its parent.
func (c *chart) title(s string) {
	c.printf("<title>")
	xml.EscapeText(c.w, []byte(printable(s)))
	c.printf("</title>")
}

func (c *chart) header(name string) {
	rp := c.rp
	c.printf(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="DejaVu Sans, Verdana, sans-serif" font-size="12" fill="#222">`+"\n", svgWidth, svgHeight, svgWidth, svgHeight)
	c.printf("<title>")
	xml.EscapeText(c.w, []byte("sessdb engage replay "+printable(name)))
	c.printf("</title>\n")
	c.printf(`<rect width="%d" height="%d" fill="#fff"/>`+"\n", svgWidth, svgHeight)
	c.printf(`<text x="20" y="30" font-size="18" font-weight="bold">sessdb engage replay `)
	xml.EscapeText(c.w, []byte(printable(name)))
	c.printf("</text>\n")
	c.text(20, 52, ` font-size="13"`, fmt.Sprintf("window %d, reserve %d: threshold %d (strictly greater engages); %d requests", rp.Window, rp.Reserve, rp.Threshold, len(rp.Rows)))
	if rp.Modelled {
		c.text(20, 72, ` font-size="13" font-weight="bold" fill="#9a3412"`, fmt.Sprintf("MODELLED: pruned ratio %s. A request sent pruned under a policy anchors that policy's next estimates on %s x its recorded usage.", ratio(rp.PrunedRatio), ratio(rp.PrunedRatio)))
	} else {
		c.text(20, 72, ` font-size="13"`, "usage as recorded (pruned ratio 1): no figure below is modelled")
	}
}

// span is a range of requests, inclusive, shown in a detail panel.
type span struct{ from, to int }

// details picks the stretches of pruned requests (under either policy) that
// get a detail panel: each padded by detailPad requests, overlapping ones
// merged, the maxDetails with the most prefix switches kept (the earlier on
// a tie), in request order.
func details(rp *Replay) []span {
	var all []span
	for _, r := range rp.Rows {
		if !r.Stateless && !r.Sticky {
			continue
		}
		s := span{max(r.N-detailPad, 1), min(r.N+detailPad, len(rp.Rows))}
		if n := len(all); n > 0 && s.from <= all[n-1].to+1 {
			all[n-1].to = s.to
		} else {
			all = append(all, s)
		}
	}
	weight := make([]int, len(all))
	for i, s := range all {
		for n := s.from; n <= s.to; n++ {
			weight[i] += switches(rp, n, func(r *Row) bool { return r.Stateless }) + switches(rp, n, func(r *Row) bool { return r.Sticky })
		}
	}
	if len(all) <= maxDetails {
		return all
	}
	// One pass keeping the heaviest so far, the earlier on a tie: a
	// transcript can hold a stretch every eight requests, and dropping the
	// lightest one at a time took a pass per stretch (quadratic).
	keep := make([]int, 0, maxDetails+1)
	for i := range all {
		j := len(keep)
		for j > 0 && weight[keep[j-1]] < weight[i] {
			j--
		}
		if keep = slices.Insert(keep, j, i); len(keep) > maxDetails {
			keep = keep[:maxDetails]
		}
	}
	slices.Sort(keep)
	kept := make([]span, len(keep))
	for k, i := range keep {
		kept[k] = all[i]
	}
	return kept
}

// switches is 1 when request n's prompt under the policy that pruned
// describes changed shape from the previous request's and n carries no
// reset or goes to another model, as Policy.Switches counts; else 0.
func switches(rp *Replay, n int, pruned func(*Row) bool) int {
	r := &rp.Rows[n-1]
	if n == 1 || r.cacheReset() || pruned(r) == pruned(&rp.Rows[n-2]) {
		return 0
	}
	return 1
}

func (c *chart) detailRow(spans []span, top float64) {
	if len(spans) == 0 {
		c.text(svgLeft, top+20, ` font-size="13" fill="#555"`, "No request goes out pruned under either policy: no detail to show.")
		return
	}
	// A label column as wide as the overview's, so the first panel lines
	// up with it.
	const gap, margin = 28, svgLeft - 20
	outer := (float64(svgRight-20) - gap*float64(len(spans)-1)) / float64(len(spans))
	for i, s := range spans {
		x := 20 + float64(i)*(outer+gap)
		c.printf(`<g class="detail">` + "\n")
		c.text(x+margin, top, ` font-weight="bold"`, fmt.Sprintf("detail %d: requests %d to %d", i+1, s.from, s.to))
		p := &panel{c: c, dots: true, from: s.from, to: s.to, x0: x + margin, x1: x + outer, y0: top + 14, y1: top + 150}
		p.draw()
		c.printf("</g>\n")
	}
}

// yAxis returns the top of the token axis and its tick step: round numbers
// (1, 2 or 5 times a power of ten) with the threshold and every reading
// plotted below the top.
func yAxis(rp *Replay) (top, step float64) {
	hi := float64(rp.Threshold)
	for _, r := range rp.Rows {
		for _, rd := range [3]Reading{r.Before.Reading(), r.StatelessReading, r.StickyReading} {
			if rd.Known {
				hi = max(hi, float64(rd.Tokens))
			}
		}
	}
	step = niceStep(hi / 4)
	return math.Ceil(hi/step) * step, step
}

// niceStep is the smallest of 1, 2 and 5 times a power of ten that is at
// least rough, and at least 1.
func niceStep(rough float64) float64 {
	for p := 1.0; ; p *= 10 {
		for _, m := range [3]float64{1, 2, 5} {
			if m*p >= rough {
				return m * p
			}
		}
	}
}

// tokens labels a tick: 150k rather than 150000 when the step allows.
func tokens(v, step float64) string {
	switch {
	case v == 0:
		return "0"
	case math.Mod(step, 1e6) == 0:
		return strconv.FormatFloat(v/1e6, 'f', -1, 64) + "M"
	case math.Mod(step, 1e3) == 0:
		return strconv.FormatFloat(v/1e3, 'f', -1, 64) + "k"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// num formats a coordinate to a tenth of a pixel, the precision the eye can
// use, without trailing zeros: deterministic, and short.
func num(v float64) string {
	v = math.Round(v*10) / 10
	if v == 0 {
		v = 0 // no "-0"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// legend writes the keys on the left and the summary of WriteTable on the
// right, each modelled figure marked as such.
func (c *chart) legend(prices *Prices, top float64) {
	rp := c.rp
	type key struct {
		draw, label string
	}
	line := func(colour string, width float64, dash string) string {
		return fmt.Sprintf(`<path d="M0 0h26" stroke="%s" stroke-width="%s"%s fill="none"/>`, colour, num(width), dash)
	}
	box := func(colour string) string {
		return fmt.Sprintf(`<rect x="4" y="-6" width="18" height="12" fill="%s"/>`, colour)
	}
	var keys []key
	if rp.Modelled {
		keys = append(keys,
			key{line(colModelBase, 4, ""), "pi's estimate before each request, as recorded (a gap: unknown after a compaction)"},
			key{line(colStateless, 1.5, ""), "the estimate the stateless check decided on (modelled)"},
			key{line(colSticky, 1.5, ""), "the estimate the sticky rule decided on (modelled; drawn over the stateless one where they agree)"})
	} else {
		keys = append(keys, key{line(colRecorded, 1.5, ""), "pi's estimate before each request (a gap: unknown after a compaction)"})
	}
	keys = append(keys,
		key{line(colThreshold, 1.5, ` stroke-dasharray="6 4"`), fmt.Sprintf("threshold %d = window - reserve: a request over it engages", rp.Threshold)},
		key{line("#666", 1, ` stroke-dasharray="3 3"`), "reset: session start, compaction or model change (a new prefix under every policy)"},
		key{box(colStateless), "request sent pruned by the stateless check"},
		key{box(colSticky), "request sent pruned by the sticky rule"},
		key{`<path d="M13 -8v16" stroke="#111" stroke-width="1.5"/>`, "prefix switch (raw to pruned or back): a prompt-cache miss"})
	for i, k := range keys {
		x, y := 20.0, top+float64(i)*18
		c.printf(`<g transform="translate(%s %s)">%s</g>`+"\n", num(x), num(y), k.draw)
		c.text(x+34, y+4, "", k.label)
	}

	mark := ""
	if rp.Modelled {
		mark = " (modelled)"
	}
	rowsOut := [][3]string{
		{"", "stateless", "sticky"},
		{"requests", fmt.Sprint(len(rp.Rows)), fmt.Sprint(len(rp.Rows))},
		{"pruned requests" + mark, fmt.Sprint(rp.Stateless.Pruned), fmt.Sprint(rp.Sticky.Pruned)},
		{"prefix switches" + mark, fmt.Sprint(rp.Stateless.Switches), fmt.Sprint(rp.Sticky.Switches)},
		{"re-billed tokens" + mark, fmt.Sprint(rp.Stateless.Rebilled), fmt.Sprint(rp.Sticky.Rebilled)},
	}
	if prices != nil {
		rowsOut = append(rowsOut, [3]string{"extra cost, USD" + mark, fmt.Sprintf("%.4f", prices.ExtraCost(rp.Stateless.Rebilled)), fmt.Sprintf("%.4f", prices.ExtraCost(rp.Sticky.Rebilled))})
	}
	const lx, ax, bx = 760, 1060, 1176
	for i, r := range rowsOut {
		y := top + 4 + float64(i)*18
		weight := ""
		if i == 0 {
			weight = ` font-weight="bold"`
		}
		c.text(lx, y, weight, r[0])
		c.text(ax, y, ` text-anchor="end"`+weight, r[1])
		c.text(bx, y, ` text-anchor="end"`+weight, r[2])
	}
	if prices != nil {
		c.text(lx, top+4+float64(len(rowsOut))*18, ` font-size="11" fill="#555"`, fmt.Sprintf("cache read %s, cache write %s USD per million tokens", ratio(prices.CacheRead), ratio(prices.CacheWrite)))
	}
}
