package engage

import (
	"fmt"
	"math"
	"strings"
)

// panel is one plot of the chart: the estimate over requests from..to
// (inclusive) in the box x0..x1, y0..y1, the two policy bands under it and
// the request axis under them. Each request owns a slot of equal width.
type panel struct {
	c              *chart
	from, to       int
	x0, x1, y0, y1 float64
	overview       bool   // ids on the elements tests find
	dots           bool   // a dot per known reading, not only per lone one
	spans          []span // overview: the ranges the detail panels show
}

func (p *panel) slot() float64 { return (p.x1 - p.x0) / float64(p.to-p.from+1) }

// edge is the left edge of request n's slot, rounded as printed, so that
// neighbouring slots share one edge exactly and a run of rects has no seam.
func (p *panel) edge(n int) float64 { return round1(p.x0 + float64(n-p.from)*p.slot()) }

func (p *panel) x(n int) float64 { return p.x0 + (float64(n-p.from)+0.5)*p.slot() }

// y is the height of v tokens. The axis starts at 0: an estimate below it
// (usage counters pi never writes) is drawn on the axis, not below the
// chart.
func (p *panel) y(v float64) float64 { return p.y1 - max(v, 0)*(p.y1-p.y0)/p.c.ymax }

func (p *panel) bandTop(k int) float64 { return p.y1 + 8 + float64(k)*(bandHeight+bandGap) }

func (p *panel) bottom() float64 { return p.bandTop(2) - bandGap }

// id is an id attribute in the overview and a class in a detail panel, so
// that ids stay unique.
func (p *panel) id(name string) string {
	if p.overview {
		return fmt.Sprintf(` id="%s"`, name)
	}
	return fmt.Sprintf(` class="%s"`, name)
}

func (p *panel) draw() {
	c := p.c
	rows := c.rp.Rows[min(p.from, len(c.rp.Rows)+1)-1 : min(p.to, len(c.rp.Rows))]
	for i, s := range p.spans {
		c.printf(`<rect x="%s" y="%s" width="%s" height="%s" fill="#eef3f8"/>`+"\n", num(p.edge(s.from)), num(p.y0), num(p.edge(s.to+1)-p.edge(s.from)), num(p.bottom()-p.y0))
		c.text((p.edge(s.from)+p.edge(s.to+1))/2, p.bottom()+28, ` font-size="11" text-anchor="middle" fill="#4a6a8a"`, fmt.Sprintf("detail %d", i+1))
	}
	p.axes()
	ty := p.y(float64(c.rp.Threshold))
	c.printf(`<line%s x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="1.5" stroke-dasharray="6 4"/>`+"\n", p.id("threshold"), num(p.x0), num(ty), num(p.x1), num(ty), colThreshold)
	if p.overview {
		c.text(p.x0+40, ty-5, ` font-size="11" fill="`+colThreshold+`"`, fmt.Sprintf("threshold %d", c.rp.Threshold))
	}
	p.resets(rows)
	if c.rp.Modelled {
		p.series(rows, "estimate", colModelBase, 4, func(r *Row) Reading { return r.Before.Reading() })
		p.series(rows, "stateless-estimate", colStateless, 1.5, func(r *Row) Reading { return r.StatelessReading })
		p.series(rows, "sticky-estimate", colSticky, 1.5, func(r *Row) Reading { return r.StickyReading })
	} else {
		p.series(rows, "estimate", colRecorded, 1.5, func(r *Row) Reading { return r.Before.Reading() })
	}
	p.band(rows, 0, "stateless", colStateless, func(r *Row) bool { return r.Stateless })
	p.band(rows, 1, "sticky", colSticky, func(r *Row) bool { return r.Sticky })
}

// axes draws the grid, the token ticks and the request ticks.
func (p *panel) axes() {
	c := p.c
	for v := 0.0; v <= c.ymax; v += c.ystep {
		y := p.y(v)
		c.printf(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#e4e4e4"/>`+"\n", num(p.x0), num(y), num(p.x1), num(y))
		c.text(p.x0-6, y+4, ` text-anchor="end" font-size="11" fill="#555"`, tokens(v, c.ystep))
	}
	step := int(niceStep(float64(p.to-p.from+1) / 10))
	ticks := []int{p.from}
	for n := (p.from/step + 1) * step; n <= p.to; n += step {
		if p.x(n)-p.x(ticks[len(ticks)-1]) < 40 {
			ticks = ticks[:len(ticks)-1] // a round number wins over the first request
		}
		ticks = append(ticks, n)
	}
	for _, n := range ticks {
		x := p.x(n)
		c.printf(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#e4e4e4"/>`+"\n", num(x), num(p.y0), num(x), num(p.y1))
		c.printf(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#888"/>`+"\n", num(x), num(p.bottom()), num(x), num(p.bottom()+4))
		c.text(x, p.bottom()+15, ` text-anchor="middle" font-size="11" fill="#555"`, fmt.Sprint(n))
	}
	c.printf(`<path%s d="M%s %sV%sH%s" fill="none" stroke="#888"/>`+"\n", p.id("axes"), num(p.x0), num(p.y0), num(p.y1), num(p.x1))
	if p.overview {
		c.text(p.x1, p.bottom()+28, ` text-anchor="end" font-size="11" fill="#555"`, "request")
		c.text(16, (p.y0+p.y1)/2, fmt.Sprintf(` text-anchor="middle" font-size="11" fill="#555" transform="rotate(-90 16 %s)"`, num((p.y0+p.y1)/2)), "estimate before the request, tokens")
	}
}

// resets draws a dashed rule at the left edge of every request that carries
// a reset or goes to another model, through the plot and the bands: the
// cached prefix is gone there whatever the policy.
func (p *panel) resets(rows []Row) {
	c := p.c
	c.printf(`<g%s stroke="#666" stroke-dasharray="3 3">`+"\n", p.id("resets"))
	for i := range rows {
		r := &rows[i]
		if !r.cacheReset() {
			continue
		}
		x := num(p.edge(r.N))
		c.printf(`<line x1="%s" y1="%s" x2="%s" y2="%s">`, x, num(p.y0), x, num(p.bottom()))
		c.title(fmt.Sprintf("request %d (%s): %s", r.N, printable(r.Entry), reset(&r.Request)))
		c.printf("</line>\n")
	}
	c.printf("</g>\n")
	last := math.Inf(-1)
	for i := range rows {
		r := &rows[i]
		if !r.cacheReset() {
			continue
		}
		// A label needs about 70 px; a reset closer to the last labelled
		// one keeps its rule and its tooltip.
		if x := p.edge(r.N); x-last >= 70 {
			c.text(x+3, p.y0+11, ` font-size="10" fill="#555"`, reset(&r.Request))
			last = x
		}
	}
}

// series draws one estimate as a path, broken where the reading is
// unknown, and a dot on every known reading, or on a lone one only (a
// subpath of one point draws nothing).
func (p *panel) series(rows []Row, name, colour string, width float64, read func(*Row) Reading) {
	c := p.c
	var d strings.Builder
	var dots []string
	known := func(i int) bool { return i >= 0 && i < len(rows) && read(&rows[i]).Known }
	for i := range rows {
		if !known(i) {
			continue
		}
		cmd := "L"
		if !known(i - 1) {
			cmd = "M"
		}
		x, y := num(p.x(rows[i].N)), num(p.y(float64(read(&rows[i]).Tokens)))
		fmt.Fprintf(&d, "%s%s %s", cmd, x, y)
		if p.dots || (!known(i-1) && !known(i+1)) {
			dots = append(dots, x, y)
		}
	}
	c.printf(`<path%s d="%s" fill="none" stroke="%s" stroke-width="%s" stroke-linejoin="round"/>`+"\n", p.id(name), d.String(), colour, num(width))
	if len(dots) == 0 {
		return
	}
	c.printf(`<g class="%s-dots" fill="%s">`, name, colour)
	for i := 0; i < len(dots); i += 2 {
		c.printf(`<circle cx="%s" cy="%s" r="%s"/>`, dots[i], dots[i+1], num(width+1))
	}
	c.printf("</g>\n")
}

// band draws policy k's band: a rect per pruned request, then a mark at the
// left edge of every request whose prompt switched shape from the
// previous one's, not counting a reset (as Policy.Switches counts).
func (p *panel) band(rows []Row, k int, name, colour string, pruned func(*Row) bool) {
	c := p.c
	top := p.bandTop(k)
	c.printf(`<rect x="%s" y="%s" width="%s" height="%d" fill="#f2f2f2" stroke="#ccc" stroke-width="0.5"/>`+"\n", num(p.x0), num(top), num(p.x1-p.x0), bandHeight)
	c.text(p.x0-6, top+bandHeight-3, ` text-anchor="end" font-size="11"`, name)
	c.printf(`<g%s fill="%s" shape-rendering="crispEdges">`, p.id(name+"-pruned"), colour)
	for i := range rows {
		if r := &rows[i]; pruned(r) {
			c.printf(`<rect x="%s" y="%s" width="%s" height="%d"/>`, num(p.edge(r.N)), num(top), num(p.edge(r.N+1)-p.edge(r.N)), bandHeight)
		}
	}
	c.printf("</g>\n")
	c.printf(`<g%s stroke="#111" stroke-width="1.5">`+"\n", p.id(name+"-switches"))
	for i := range rows {
		r := &rows[i]
		if switches(c.rp, r.N, pruned) == 0 {
			continue
		}
		how := "raw to pruned"
		if !pruned(r) {
			how = "pruned to raw"
		}
		c.printf(`<path d="M%s %sv%d">`, num(p.edge(r.N)), num(top-4), bandHeight+8)
		c.title(fmt.Sprintf("request %d (%s): %s, %s switches", r.N, printable(r.Entry), how, name))
		c.printf("</path>\n")
	}
	c.printf("</g>\n")
}

func round1(v float64) float64 { return math.Round(v*10) / 10 }
