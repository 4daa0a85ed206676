package engage

import (
	"bytes"
	"encoding/xml"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// xnode is any SVG element, kept whole for the tests to walk.
type xnode struct {
	XMLName xml.Name
	Attrs   []xml.Attr `xml:",any,attr"`
	Nodes   []xnode    `xml:",any"`
	Text    string     `xml:",chardata"`
}

func (n *xnode) attr(name string) string {
	for _, a := range n.Attrs {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

func (n *xnode) num(tb testing.TB, name string) float64 {
	tb.Helper()
	v, err := strconv.ParseFloat(n.attr(name), 64)
	if err != nil {
		tb.Fatalf("<%s> %s=%q: %v", n.XMLName.Local, name, n.attr(name), err)
	}
	return v
}

// walk calls f on n and every element below it, in document order.
func (n *xnode) walk(f func(*xnode)) {
	f(n)
	for i := range n.Nodes {
		n.Nodes[i].walk(f)
	}
}

func (n *xnode) byID(tb testing.TB, id string) *xnode {
	tb.Helper()
	var found []*xnode
	n.walk(func(m *xnode) {
		if m.attr("id") == id {
			found = append(found, m)
		}
	})
	if len(found) != 1 {
		tb.Fatalf("%d elements with id %q, want 1", len(found), id)
	}
	return found[0]
}

// texts returns the character data of every <text> element, in order.
func (n *xnode) texts() []string {
	var out []string
	n.walk(func(m *xnode) {
		if m.XMLName.Local == "text" {
			out = append(out, m.Text)
		}
	})
	return out
}

// parseSVG parses a chart strictly (encoding/xml refuses what is not
// well-formed XML) and checks the root.
func parseSVG(tb testing.TB, b []byte) *xnode {
	tb.Helper()
	var root xnode
	dec := xml.NewDecoder(bytes.NewReader(b))
	dec.Strict = true
	if err := dec.Decode(&root); err != nil {
		tb.Fatalf("the chart is not XML: %v", err)
	}
	if root.XMLName.Local != "svg" || root.XMLName.Space != "http://www.w3.org/2000/svg" || root.attr("width") != "1200" || root.attr("height") != "800" {
		tb.Fatalf("root <%s xmlns=%q width=%q height=%q>, want a 1200x800 svg", root.XMLName.Local, root.XMLName.Space, root.attr("width"), root.attr("height"))
	}
	return &root
}

// vertex is one point of a path's d: the command that made it and where.
type vertex struct {
	cmd  byte
	x, y float64
}

// vertices reads a d made of absolute M and L commands, each with one x y
// pair; anything else fails the test, so a vertex cannot hide.
func vertices(tb testing.TB, d string) []vertex {
	tb.Helper()
	var out []vertex
	for d != "" {
		cmd := d[0]
		if cmd != 'M' && cmd != 'L' {
			tb.Fatalf("path command %q in %q: want only M and L", cmd, d)
		}
		d = d[1:]
		end := strings.IndexAny(d, "ML")
		if end < 0 {
			end = len(d)
		}
		var v vertex
		v.cmd = cmd
		if _, err := fmt.Sscanf(d[:end], "%g %g", &v.x, &v.y); err != nil {
			tb.Fatalf("vertex %q: %v", d[:end], err)
		}
		out, d = append(out, v), d[end:]
	}
	return out
}

// layout is what the overview's axes and threshold line say about its
// scales: where request n's slot starts and where tokens sit.
type layout struct {
	x0, slot, bottom, perToken float64
}

func overviewLayout(tb testing.TB, root *xnode, rp *Replay) layout {
	tb.Helper()
	var x0, top, bottom, x1 float64
	if _, err := fmt.Sscanf(root.byID(tb, "axes").attr("d"), "M%g %gV%gH%g", &x0, &top, &bottom, &x1); err != nil {
		tb.Fatalf("path#axes: %v", err)
	}
	th := root.byID(tb, "threshold")
	if th.num(tb, "y1") != th.num(tb, "y2") || th.num(tb, "x1") != x0 || th.num(tb, "x2") != x1 {
		tb.Fatalf("line#threshold is not a horizontal rule across the plot")
	}
	return layout{x0: x0, slot: (x1 - x0) / float64(max(len(rp.Rows), 1)), bottom: bottom, perToken: (bottom - th.num(tb, "y1")) / float64(rp.Threshold)}
}

// request returns the request whose slot starts at x (a left edge), or
// fails: coordinates are printed to a tenth of a pixel.
func (l layout) request(tb testing.TB, x float64) int {
	tb.Helper()
	n := (x-l.x0)/l.slot + 1
	if math.Abs(n-math.Round(n))*l.slot > 0.051 {
		tb.Fatalf("x %v is not on a slot edge (slot %v px from %v)", x, l.slot, l.x0)
	}
	return int(math.Round(n))
}

// checkSeries checks that path d holds one vertex per known reading, at its
// request's slot centre and its height, with a new subpath after every
// unknown reading.
func checkSeries(t *testing.T, name, d string, l layout, rows []Row, read func(*Row) Reading) {
	t.Helper()
	vs := vertices(t, d)
	i := 0
	for k := range rows {
		rd := read(&rows[k])
		if !rd.Known {
			continue
		}
		if i == len(vs) {
			t.Errorf("%s: %d vertices, but request %d has a known reading", name, len(vs), rows[k].N)
			return
		}
		v := vs[i]
		i++
		wantCmd := byte('L')
		if k == 0 || !read(&rows[k-1]).Known {
			wantCmd = 'M'
		}
		wantX := l.x0 + (float64(rows[k].N)-0.5)*l.slot
		wantY := l.bottom - float64(rd.Tokens)*l.perToken
		if v.cmd != wantCmd || math.Abs(v.x-wantX) > 0.051 || math.Abs(v.y-wantY) > 0.11 {
			t.Errorf("%s: request %d (%v tokens) drawn as %c%v %v, want %c%.1f %.1f", name, rows[k].N, rd.Tokens, v.cmd, v.x, v.y, wantCmd, wantX, wantY)
		}
	}
	if i != len(vs) {
		t.Errorf("%s: %d vertices for %d known readings", name, len(vs), i)
	}
}

// marked returns the requests the children of g mark: rects by their x,
// paths by their M, lines by their x1.
func marked(tb testing.TB, g *xnode, l layout) []int {
	tb.Helper()
	var out []int
	for i := range g.Nodes {
		m := &g.Nodes[i]
		var x float64
		switch m.XMLName.Local {
		case "rect":
			x = m.num(tb, "x")
		case "line":
			x = m.num(tb, "x1")
		case "path":
			if _, err := fmt.Sscanf(m.attr("d"), "M%g", &x); err != nil {
				tb.Fatalf("marker d=%q: %v", m.attr("d"), err)
			}
		default:
			tb.Fatalf("<%s> in g#%s", m.XMLName.Local, g.attr("id"))
		}
		out = append(out, l.request(tb, x))
	}
	return out
}

// checkChart holds a chart to the structure WriteSVG documents, against the
// replay's rows and summary.
func checkChart(t *testing.T, b []byte, rp *Replay, prices *Prices) {
	t.Helper()
	root := parseSVG(t, b)
	l := overviewLayout(t, root, rp)
	checkSeries(t, "path#estimate", root.byID(t, "estimate").attr("d"), l, rp.Rows, func(r *Row) Reading { return r.Before.Reading() })
	if rp.Modelled {
		checkSeries(t, "path#stateless-estimate", root.byID(t, "stateless-estimate").attr("d"), l, rp.Rows, func(r *Row) Reading { return r.StatelessReading })
		checkSeries(t, "path#sticky-estimate", root.byID(t, "sticky-estimate").attr("d"), l, rp.Rows, func(r *Row) Reading { return r.StickyReading })
	}
	var resets []int
	for _, r := range rp.Rows {
		if r.Event != None || r.NewModel {
			resets = append(resets, r.N)
		}
	}
	if got := marked(t, root.byID(t, "resets"), l); !slices.Equal(got, resets) {
		t.Errorf("reset rules at requests %v, want %v", got, resets)
	}
	for _, pol := range []struct {
		name   string
		sum    Policy
		pruned func(*Row) bool
	}{
		{"stateless", rp.Stateless, func(r *Row) bool { return r.Stateless }},
		{"sticky", rp.Sticky, func(r *Row) bool { return r.Sticky }},
	} {
		// The requests each mark should fall on, from the rows alone.
		var pruned, switched []int
		for i := range rp.Rows {
			r := &rp.Rows[i]
			if pol.pruned(r) {
				pruned = append(pruned, r.N)
			}
			if i > 0 && r.Event == None && !r.NewModel && pol.pruned(r) != pol.pruned(&rp.Rows[i-1]) {
				switched = append(switched, r.N)
			}
		}
		if len(pruned) != pol.sum.Pruned || len(switched) != pol.sum.Switches {
			t.Fatalf("%s: the rows give %d pruned and %d switches, the summary %d and %d", pol.name, len(pruned), len(switched), pol.sum.Pruned, pol.sum.Switches)
		}
		if got := marked(t, root.byID(t, pol.name+"-pruned"), l); !slices.Equal(got, pruned) {
			t.Errorf("%s band shades requests %v, want %v", pol.name, got, pruned)
		}
		if got := marked(t, root.byID(t, pol.name+"-switches"), l); !slices.Equal(got, switched) {
			t.Errorf("%s switches marked at requests %v, want %v", pol.name, got, switched)
		}
	}

	// The legend repeats the summary: each label followed by its two figures.
	mark := ""
	if rp.Modelled {
		mark = " (modelled)"
	}
	rows := [][3]string{
		{"requests", fmt.Sprint(len(rp.Rows)), fmt.Sprint(len(rp.Rows))},
		{"pruned requests" + mark, fmt.Sprint(rp.Stateless.Pruned), fmt.Sprint(rp.Sticky.Pruned)},
		{"prefix switches" + mark, fmt.Sprint(rp.Stateless.Switches), fmt.Sprint(rp.Sticky.Switches)},
		{"re-billed tokens" + mark, fmt.Sprint(rp.Stateless.Rebilled), fmt.Sprint(rp.Sticky.Rebilled)},
	}
	if prices != nil {
		rows = append(rows, [3]string{"extra cost, USD" + mark, fmt.Sprintf("%.4f", prices.ExtraCost(rp.Stateless.Rebilled)), fmt.Sprintf("%.4f", prices.ExtraCost(rp.Sticky.Rebilled))})
	}
	texts := root.texts()
	for _, r := range rows {
		i := slices.Index(texts, r[0])
		if i < 0 || i+2 >= len(texts) || texts[i+1] != r[1] || texts[i+2] != r[2] {
			t.Errorf("legend lacks %q %s %s", r[0], r[1], r[2])
		}
	}
	if got := slices.ContainsFunc(texts, func(s string) bool { return strings.HasPrefix(s, "MODELLED: pruned ratio "+ratio(rp.PrunedRatio)+".") }); got != rp.Modelled {
		t.Errorf("MODELLED notice shown %v, want %v", got, rp.Modelled)
	}
}

func writeSVG(t *testing.T, rp *Replay, name string, prices *Prices) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := rp.WriteSVG(&b, name, prices); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// Fixture 10 (few requests: one panel, a dot per reading) and the real
// 484-request session at a 190000 window (details under the overview), as
// recorded and modelled.
func TestSVGStructure(t *testing.T) {
	prices := &Prices{CacheRead: 0.5, CacheWrite: 6.25}
	cases := []struct {
		path string
		opt  Options
	}{
		{fixture(t, "10-sticky-engagement.jsonl"), DefaultOptions()},
		{fixture(t, "10-sticky-engagement.jsonl"), Options{Window: DefaultWindow, Reserve: DefaultReserve, PrunedRatio: 0.7}},
		{filepath.Join(shared(t, "pi"), "before-compaction.jsonl"), Options{Window: 190000, Reserve: DefaultReserve, PrunedRatio: 1}},
		{filepath.Join(shared(t, "pi"), "before-compaction.jsonl"), Options{Window: 190000, Reserve: DefaultReserve, PrunedRatio: 0.75}},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s@%v", filepath.Base(c.path), c.opt.PrunedRatio), func(t *testing.T) {
			tr, err := ReadFile(c.path)
			if err != nil {
				t.Fatal(err)
			}
			rp, err := tr.Replay(c.opt)
			if err != nil {
				t.Fatal(err)
			}
			if rp.Stateless.Switches == 0 {
				t.Fatalf("the case shows no switch: it tests nothing about the markers")
			}
			for _, p := range []*Prices{nil, prices} {
				b := writeSVG(t, rp, filepath.Base(c.path), p)
				checkChart(t, b, rp, p)
				if again := writeSVG(t, rp, filepath.Base(c.path), p); !bytes.Equal(again, b) {
					t.Errorf("a second WriteSVG of the same replay wrote other bytes")
				}
			}
		})
	}
}

// Every estimate unknown, no request, a lone known reading between unknown
// ones: the chart still parses and holds exactly the known points.
func TestSVGEdges(t *testing.T) {
	comp := `{"type":"compaction","id":"c","parentId":"a1","summary":"12345678","firstKeptEntryId":"a1"}`
	cases := map[string]struct {
		lines    []string
		readings string // k known, ? unknown, per request
	}{
		"no request": {[]string{v3, msgLine("u1", "", `{"role":"user","content":"hi"}`)}, ""},
		"lone point": {[]string{v3, msgLine("u1", "", `{"role":"user","content":"hi"}`), msgLine("a1", "u1", asst(5000, "stop")), comp,
			msgLine("a2", "c", asst(300, "stop")), msgLine("a3", "a2", asst(200, "stop")),
			`{"type":"compaction","id":"c2","parentId":"a3","summary":"12345678","firstKeptEntryId":"a3"}`,
			msgLine("a4", "c2", asst(0, "stop"))}, "k?k?"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			rp, err := read(t, c.lines...).Replay(Options{Window: 1000, Reserve: 100})
			if err != nil {
				t.Fatal(err)
			}
			var got strings.Builder
			for _, r := range rp.Rows {
				if r.Before.Reading().Known {
					got.WriteByte('k')
				} else {
					got.WriteByte('?')
				}
			}
			if got.String() != c.readings {
				t.Fatalf("readings %q, want %q: the case does not test what it says", got.String(), c.readings)
			}
			checkChart(t, writeSVG(t, rp, name, nil), rp, nil)
		})
	}
}

// The golden charts of fixture 10, as go/printer's tests keep theirs:
// rewritten with go test ./engage -run TestSVGGolden -update.
func TestSVGGolden(t *testing.T) {
	tr := readFixture(t, "10-sticky-engagement.jsonl")
	for _, c := range []struct {
		file   string
		ratio  float64
		prices *Prices
	}{
		{"replay10.svg", 1, nil},
		{"replay10-modelled.svg", 0.7, &Prices{CacheRead: 0.3, CacheWrite: 3.75}},
	} {
		rp, err := tr.Replay(Options{Window: DefaultWindow, Reserve: DefaultReserve, PrunedRatio: c.ratio})
		if err != nil {
			t.Fatal(err)
		}
		got := writeSVG(t, rp, "10-sticky-engagement.jsonl", c.prices)
		path := filepath.Join("testdata", c.file)
		if *update {
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (go test ./engage -run TestSVGGolden -update writes it)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from the golden file (rerun with -update if the change is meant)", path)
		}
	}
}

// detailLabels are a chart's detail panels, as their headings say.
func detailLabels(b []byte) []string {
	return regexp.MustCompile(`detail \d+: requests \d+ to \d+`).FindAllString(string(b), -1)
}

// A replay too dense for the overview gets at most three detail panels:
// each stretch of pruned requests padded by three requests each side
// (within 1..len), stretches that overlap or touch merged, and the three
// with the most prefix switches shown, the earlier on a tie, in request
// order (the WriteSVG doc, docs/engage.md). The replays are made by hand,
// 200 requests with no reset but the first, so each pruned stretch and its
// switches are what the case says.
func TestDetailPanelsShowTheStretchesWithTheMostSwitches(t *testing.T) {
	replay := func(stateless, sticky []int) *Replay {
		rp := &Replay{Window: 1000, Reserve: 100, Threshold: 900, PrunedRatio: 1}
		for n := 1; n <= 200; n++ {
			r := Row{Request: Request{N: n, Entry: fmt.Sprint("a", n)}, Stateless: slices.Contains(stateless, n), Sticky: slices.Contains(sticky, n)}
			if n == 1 {
				r.Event = Start
			}
			rp.Rows = append(rp.Rows, r)
		}
		return rp
	}
	for _, c := range []struct {
		name              string
		stateless, sticky []int
		want              []string
	}{
		{
			// Switch counts: 2 (at 2), 2 (at 20), 6 (60-64 flapping), 4
			// (170 and 177, whose padded stretches 167-173 and 174-180
			// touch), 7 (194-200 flapping, the last request pruned).
			name:      "the heaviest three",
			stateless: []int{2, 20, 60, 62, 64, 170, 177, 194, 196, 198, 200},
			want:      []string{"detail 1: requests 57 to 67", "detail 2: requests 167 to 180", "detail 3: requests 191 to 200"},
		},
		{
			// Four stretches of 2 switches (one under sticky alone) beside
			// one of 6: the earlier two of the four are kept.
			name:      "ties go to the earlier",
			stateless: []int{2, 20, 60, 62, 64},
			sticky:    []int{40, 41},
			want:      []string{"detail 1: requests 1 to 5", "detail 2: requests 17 to 23", "detail 3: requests 57 to 67"},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			rp := replay(c.stateless, c.sticky)
			b := writeSVG(t, rp, c.name, nil)
			if got := detailLabels(b); !slices.Equal(got, c.want) {
				t.Errorf("detail panels %q, want %q", got, c.want)
			}
			// The overview shades the requests each panel shows, no more.
			root := parseSVG(t, b)
			l := overviewLayout(t, root, rp)
			var shaded []string
			root.walk(func(n *xnode) {
				if n.XMLName.Local == "rect" && n.attr("fill") == "#eef3f8" {
					x := n.num(t, "x")
					shaded = append(shaded, fmt.Sprintf("detail %d: requests %d to %d", len(shaded)+1, l.request(t, x), l.request(t, x+n.num(t, "width"))-1))
				}
			})
			if !slices.Equal(shaded, c.want) {
				t.Errorf("the overview shades %q, want %q", shaded, c.want)
			}
		})
	}
}

// Every reading is plotted inside the plot, however far above the
// threshold it lies: the token axis runs up to the highest reading, the
// recorded ones and each policy's modelled ones alike. One below zero
// (usage counters pi never writes) sits on the axis; it was drawn below
// the chart (-2^62 at y 913.6 on an 800-pixel canvas).
func TestEveryReadingIsPlottedInsideThePlot(t *testing.T) {
	rp := &Replay{Window: 1000, Reserve: 100, Threshold: 900, PrunedRatio: 0.5, Modelled: true}
	for n, v := range []int64{100, 2000, 5000, 300, -1 << 62} {
		rp.Rows = append(rp.Rows, Row{Request: Request{N: n + 1, Entry: fmt.Sprint("a", n+1), Before: Estimate{Tokens: v}},
			StatelessReading: Known(v), StickyReading: Known(v)})
	}
	rp.Rows[0].Event = Start
	rp.Rows[3].StatelessReading, rp.Rows[3].StickyReading = Known(6500), Known(7000)
	root := parseSVG(t, writeSVG(t, rp, "high", nil))
	var x0, top, bottom, x1 float64
	if _, err := fmt.Sscanf(root.byID(t, "axes").attr("d"), "M%g %gV%gH%g", &x0, &top, &bottom, &x1); err != nil {
		t.Fatalf("path#axes: %v", err)
	}
	for _, id := range []string{"estimate", "stateless-estimate", "sticky-estimate"} {
		vs := vertices(t, root.byID(t, id).attr("d"))
		if len(vs) != len(rp.Rows) {
			t.Fatalf("path#%s: %d vertices, want %d", id, len(vs), len(rp.Rows))
		}
		for i, v := range vs {
			if v.y < top || v.y > bottom {
				t.Errorf("path#%s: request %d drawn at y %v, outside the plot's %v..%v", id, i+1, v.y, top, bottom)
			}
		}
	}
}

// Every coordinate and label of a chart is a finite number, for a replay
// of no request as for any other: an SVG attribute of "+Inf" or "NaN" is
// no coordinate a viewer can draw. The token axis is labelled in plain
// round numbers: for a threshold of 900, a quarter of it rounded up to
// 1, 2 or 5 times a power of ten is a step of 500, so 0, 500 and 1000.
func TestAChartOfNoRequestHasOnlyFiniteNumbers(t *testing.T) {
	for _, rp := range []*Replay{
		{Window: 1000, Reserve: 100, Threshold: 900, PrunedRatio: 1},
		{Window: 1000, Reserve: 100, Threshold: 900, PrunedRatio: 1, Rows: []Row{{Request: Request{N: 1, Event: Start}}}},
	} {
		b := writeSVG(t, rp, "empty", nil)
		if m := regexp.MustCompile(`[+-]Inf|NaN`).Find(b); m != nil {
			t.Errorf("the chart of %d requests holds %q:\n%s", len(rp.Rows), m, b)
		}
		var labels []string
		for _, m := range regexp.MustCompile(`<text [^>]*text-anchor="end" font-size="11" fill="#555">([^<]*)</text>`).FindAllSubmatch(b, -1) {
			if string(m[1]) != "request" { // the request axis's title, set the same way
				labels = append(labels, string(m[1]))
			}
		}
		if want := []string{"0", "500", "1000"}; !slices.Equal(labels, want) {
			t.Errorf("the chart of %d requests labels its token axis %q, want %q", len(rp.Rows), labels, want)
		}
		checkChart(t, b, rp, nil)
	}
}
