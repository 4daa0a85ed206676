package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"sessdb/fleet"
	"sessdb/gates"
	"sessdb/store"
)

var cmdStats = &command{
	name:  "stats",
	usage: "stats [--since DURATION] [--json | --prometheus] [--at TIME] [DIR | --etcd-endpoints URLS --transcripts-dir DIR]",
	short: "count a sessions root's or a fleet's keys by layout and verdict, its recent promotions, its sizes, chains and context occupancy (read-only)",
	long: `
One walk of the sessions root (DIR, else --sessions-dir or PI_SESSIONS_DIR),
read-only like dump, summed up: keys by layout and by the verdict a job
matching each key's own stamps would get now; the promotions of the last
--since (24h by default), taken from the keys' histories, resumed and cold
(with the cold reason), refused (by reason) and by run shape, with the bytes
promoted; the distributions of transcript size, resume chain and context
occupancy (per bucket, p50, p95, max); and the bytes the transcripts and the
metadata take.

On a fleet (--etcd-endpoints, or PI_SESSIONS_ETCD_ENDPOINTS with no sessions
root given; docs/fleet.md) it walks every record in etcd, one snapshot, as
dump does, and prints the same report, fields and metrics: the keys' layout
is etcd, the transcripts are the generation files the records name, and the
metadata is the bytes etcd holds for the records and histories. A sessions
root given with the fleet's variables set (PI_SESSIONS_ETCD_ENDPOINTS, a
PI_SESSIONS_DIR left from before a move to the fleet) is counted, and stats
says on stderr that these are that root's figures, not the fleet's; with a
fleet flag given on the command line it is refused, exit 2, as every
command refuses a root and a fleet together. Another fleet setting
(PI_SESSIONS_TRANSCRIPTS_DIR, PI_SESSIONS_ETCD_PREFIX, ...) without
endpoints is a configuration error, exit 2, as in every command.

The default is a short report for people; --json prints one object, and
--prometheus the text exposition format, for node_exporter's textfile
collector (docs/stats.md: every field, every metric, the cron line and the
systemd timer that write it atomically). A key's history keeps its last 64
entries: a window longer than a busy key's ring undercounts, and says so.`,
	example: `  sessdb stats /var/lib/pi/sessions
  sessdb stats --since 168h --json /var/lib/pi/sessions | jq .promotions
  d=/var/lib/node_exporter/textfile; sessdb stats --prometheus /var/lib/pi/sessions > $d/sessdb.prom.tmp && mv $d/sessdb.prom.tmp $d/sessdb.prom
  sessdb stats --etcd-endpoints http://127.0.0.1:2379 --transcripts-dir /srv/pi/transcripts`,
	exits:   []int{exitOK, exitFault, exitUsage, exitInterrupted},
	maxArgs: 1,
	bind:    bindStats,
}

func bindStats(fs *flag.FlagSet) func(*invocation) int {
	cfg := bindConfig(fs)
	fk := bindFleet(fs)
	since := bindDuration(fs, "since", 24*time.Hour, "the window of promotions counted, back from now (or --at), a `DURATION` in Go's format (90m, 24h, 168h; no d unit)")
	asJSON := fs.Bool("json", false, "one JSON object (fields: docs/stats.md)")
	asProm := fs.Bool("prometheus", false, "Prometheus text exposition format, for node_exporter's textfile collector (metrics: docs/stats.md)")
	at := bindAt(fs)
	return func(inv *invocation) int {
		_, atOpt, err := at.now()
		if err != nil {
			return inv.rep.usage(err)
		}
		switch {
		case *since <= 0:
			return inv.rep.usage(fmt.Errorf("--since: %s must be positive", *since))
		case *asJSON && *asProm:
			return inv.rep.usage(errors.New("--json and --prometheus: choose one"))
		}
		onFleet, note, err := statsStore(cfg, fk, inv.arg(0), os.Getenv)
		if err != nil {
			return inv.rep.config(err)
		}
		// Signals are caught from before a fleet's connection, which can
		// wait up to its request timeout (openFleetWalk).
		ctx, stop := interruptContext()
		defer stop()
		prog := progressTo(inv, "stats")
		var walk func(context.Context) (*store.Stats, error)
		if onFleet {
			fc, _, code := fleetOf(inv, cfg, fk, inv.arg(0))
			if code != exitOK {
				return code
			}
			sopts, err := storeOptions(cfg, inv, atOpt)
			if err != nil {
				return inv.rep.config(err)
			}
			b, stopped, code := openFleetWalk(ctx, inv, fk, fc)
			switch {
			case stopped:
				// A signal while it connected: nothing read, the figures
				// of no key, marked interrupted.
				walk = func(ctx context.Context) (*store.Stats, error) {
					return store.SumStats(ctx, sopts.Now(), *since, func(func(store.KeyReport) error) error { return ctx.Err() })
				}
			case b == nil:
				return code
			default:
				defer b.Close()
				walk = func(ctx context.Context) (*store.Stats, error) {
					return b.Stats(ctx, fleet.StatsOptions{Window: *since, Bounds: sopts.Bounds, Now: sopts.Now, Progress: prog.report()})
				}
			}
		} else {
			st, code := openWalk(inv, cfg, atOpt)
			if st == nil {
				return code
			}
			walk = func(ctx context.Context) (*store.Stats, error) {
				return st.Stats(ctx, store.StatsOptions{Window: *since, Progress: prog.report()})
			}
		}
		start := clock()
		stats, err := walk(ctx)
		walked := clock().Sub(start)
		prog.clear()
		if stats == nil {
			return inv.rep.fault(err) // nothing on stdout
		}
		// Said once there are figures: a root that could not be read
		// has none, and its error says so alone.
		if note != "" {
			inv.rep.warn(note)
		}
		w := bufio.NewWriter(inv.stdout)
		var werr error
		switch {
		case *asJSON:
			werr = json.NewEncoder(w).Encode(statsObject(stats, walked))
		case *asProm:
			werr = writeStatsProm(w, stats, walked)
		default:
			werr = writeStatsText(w, stats, walked, onFleet)
		}
		if ferr := w.Flush(); werr == nil {
			werr = ferr
		}
		switch {
		case werr != nil:
			return inv.rep.fault(fmt.Errorf("write: %w", werr))
		case errors.Is(err, context.Canceled):
			return inv.rep.interrupted(stats.Entries)
		case err != nil:
			return inv.rep.fault(err)
		}
		return exitOK
	}
}

// statsStore says which store stats counts: the fleet (onFleet) or a
// sessions root. With no etcd endpoints it is the root, and a fleet
// setting without them is refused, as every command refuses it. With
// endpoints and no sessions root given (DIR, --sessions-dir,
// PI_SESSIONS_DIR), the fleet. With both, what an operator meant decides:
// a fleet setting given as a flag on the command line is refused beside
// a root, as every command refuses the two together (each was asked
// for); a fleet that is all the environment's (a worker's environment, a
// PI_SESSIONS_DIR left from before the move to the fleet, or a root
// named to count it) leaves the root counted, with a note saying so,
// naming the root and where it came from: stats counted the root so
// before it ran on a fleet, and an operator's DIR is the more deliberate
// of the two.
func statsStore(cfg *config, fk *fleetKnobs, arg string, getenv func(string) string) (onFleet bool, note string, err error) {
	// Read as every command reads it: blank is an error (endpointsSetting).
	raw, endpoints, err := fk.endpointsSetting(getenv)
	switch {
	case err != nil:
		return false, "", err
	case raw == "":
		if _, _, err := fk.connection(getenv); err != nil {
			return false, "", err // a fleet setting without endpoints
		}
		return false, "", nil
	}
	given, from := cfg.dirSetting(getenv, arg)
	if given == "" {
		return true, "", nil
	}
	for _, k := range fk.all() {
		if k.value != "" {
			return false, "", fmt.Errorf("%s %s and --%s are both given: stats counts a sessions root or a fleet, not both (give no root to count the fleet)", from, quoteName(given), k.flag)
		}
	}
	root, err := cfg.dir(getenv, arg)
	if err != nil {
		return false, "", nil // the root's own error, reported when it is opened
	}
	return false, fmt.Sprintf("%s is set, and a sessions root is given: these are the figures of the sessions root %s (%s), not the fleet's (to count the fleet, give no root: no DIR, --sessions-dir or %s)", endpoints, quoteName(root), from, cfg.sessionsDir.env), nil
}

// statsJSON is the object stats --json prints (docs/stats.md). Every field
// is always present; a percentile of no values is null.
type statsJSON struct {
	At            time.Time     `json:"at"`
	WindowSeconds float64       `json:"window_seconds"`
	WalkSeconds   float64       `json:"walk_seconds"`
	Interrupted   bool          `json:"interrupted"`
	Entries       int           `json:"entries"`
	Keys          int           `json:"keys"`
	OtherEntries  int           `json:"other_entries"`
	Layouts       []layoutKeys  `json:"layouts"`
	Verdicts      []reasonKeys  `json:"verdicts"`
	Promotions    promotionJSON `json:"promotions"`
	Distributions struct {
		Bytes       distributionJSON `json:"bytes"`
		ResumeChain distributionJSON `json:"resume_chain"`
		ContextPct  distributionJSON `json:"context_pct"`
	} `json:"distributions"`
	Disk struct {
		TranscriptBytes int64 `json:"transcript_bytes"`
		MetaDBBytes     int64 `json:"meta_db_bytes"`
		LegacyBytes     int64 `json:"legacy_bytes"`
		EtcdBytes       int64 `json:"etcd_bytes"`
	} `json:"disk"`
}

type layoutKeys struct {
	Layout string `json:"layout"`
	Keys   int64  `json:"keys"`
}

type reasonKeys struct {
	Reason string `json:"reason"`
	Keys   int64  `json:"keys"`
}

type promotionJSON struct {
	Entries       int64           `json:"entries"`
	Promoted      int64           `json:"promoted"`
	Resumed       int64           `json:"resumed"`
	Cold          int64           `json:"cold"`
	Refused       int64           `json:"refused"`
	Accepted      int64           `json:"accepted"` // an operator's check --repair --accept
	Other         int64           `json:"other"`
	Bytes         int64           `json:"bytes"`
	TruncatedKeys int             `json:"truncated_keys"`
	ColdReasons   []reasonPromos  `json:"cold_reasons"`
	Refusals      []reasonRefused `json:"refusals"`
	Runs          []runCount      `json:"runs"`
}

type reasonPromos struct {
	Reason     string `json:"reason"`
	Promotions int64  `json:"promotions"`
}

type reasonRefused struct {
	Reason   string `json:"reason"`
	Refusals int64  `json:"refusals"`
}

type runCount struct {
	Run        string `json:"run"`
	Promotions int64  `json:"promotions"`
	Refusals   int64  `json:"refusals"`
}

type distributionJSON struct {
	Keys    int64        `json:"keys"`
	Sum     int64        `json:"sum"`
	P50     *int64       `json:"p50"`
	P95     *int64       `json:"p95"`
	Max     *int64       `json:"max"`
	Buckets []bucketJSON `json:"buckets"`
}

// bucketJSON is one bucket: the keys whose value is at most Le and above
// the previous bucket's; Le null is the last bucket, above every bound.
type bucketJSON struct {
	Le   *int64 `json:"le"`
	Keys int64  `json:"keys"`
}

// The predicates the outputs sum promotions by.
var (
	isPromoted = func(k store.PromotionKind) bool { return k.Outcome == string(gates.Promoted) }
	isRefused  = func(k store.PromotionKind) bool {
		return k.Outcome != string(gates.Promoted) && k.Outcome != store.AcceptedOutcome && k.Outcome != "other"
	}
)

func statsObject(s *store.Stats, walked time.Duration) statsJSON {
	o := statsJSON{
		At: s.At, WindowSeconds: s.Window.Seconds(), WalkSeconds: walked.Seconds(), Interrupted: s.Interrupted,
		Entries: s.Entries, Keys: s.Keys, OtherEntries: s.OtherEntries,
		Layouts: []layoutKeys{}, Verdicts: []reasonKeys{},
	}
	for _, t := range s.Layouts {
		o.Layouts = append(o.Layouts, layoutKeys{t.Label, t.N})
	}
	for _, t := range s.Verdicts {
		o.Verdicts = append(o.Verdicts, reasonKeys{t.Label, t.N})
	}
	p := s.Promotions
	o.Promotions = promotionJSON{
		Entries:  p.Count(nil),
		Promoted: p.Count(isPromoted),
		Resumed: p.Count(func(k store.PromotionKind) bool {
			return isPromoted(k) && k.Start == string(gates.Resumed)
		}),
		Refused:       p.Count(isRefused),
		Accepted:      p.Count(func(k store.PromotionKind) bool { return k.Outcome == store.AcceptedOutcome }),
		Other:         p.Count(func(k store.PromotionKind) bool { return k.Outcome == "other" }),
		Bytes:         p.Bytes,
		TruncatedKeys: p.TruncatedKeys,
		ColdReasons:   []reasonPromos{}, Refusals: []reasonRefused{}, Runs: []runCount{},
	}
	o.Promotions.Cold = o.Promotions.Promoted - o.Promotions.Resumed
	for _, r := range store.StatStarts()[1:] { // after resumed: the cold reasons
		n := p.Count(func(k store.PromotionKind) bool { return isPromoted(k) && k.Start == r })
		o.Promotions.ColdReasons = append(o.Promotions.ColdReasons, reasonPromos{r, n})
	}
	for _, r := range store.StatOutcomes() {
		if r == string(gates.Promoted) || r == store.AcceptedOutcome || r == "other" {
			continue
		}
		n := p.Count(func(k store.PromotionKind) bool { return k.Outcome == r })
		o.Promotions.Refusals = append(o.Promotions.Refusals, reasonRefused{r, n})
	}
	for _, r := range store.StatRuns() {
		ofRun := func(k store.PromotionKind) bool { return k.Run == r }
		o.Promotions.Runs = append(o.Promotions.Runs, runCount{
			Run:        r,
			Promotions: p.Count(func(k store.PromotionKind) bool { return ofRun(k) && isPromoted(k) }),
			Refusals:   p.Count(func(k store.PromotionKind) bool { return ofRun(k) && isRefused(k) }),
		})
	}
	o.Distributions.Bytes = distributionObject(s.Bytes)
	o.Distributions.ResumeChain = distributionObject(s.ResumeChain)
	o.Distributions.ContextPct = distributionObject(s.ContextPct)
	o.Disk.TranscriptBytes, o.Disk.MetaDBBytes, o.Disk.LegacyBytes, o.Disk.EtcdBytes = s.TranscriptBytes, s.MetaDBBytes, s.LegacyBytes, s.EtcdBytes
	return o
}

func distributionObject(d *store.Distribution) distributionJSON {
	o := distributionJSON{Keys: d.N, Sum: d.Sum, Buckets: []bucketJSON{}}
	value := func(v int64, ok bool) *int64 {
		if !ok {
			return nil
		}
		return &v
	}
	o.P50, o.P95, o.Max = value(d.Quantile(0.50)), value(d.Quantile(0.95)), value(d.Max())
	for i, n := range d.Counts {
		var le *int64
		if i < len(d.Bounds) {
			le = &d.Bounds[i]
		}
		o.Buckets = append(o.Buckets, bucketJSON{le, n})
	}
	return o
}

// writeStatsText writes the short report: aligned sections that fit in
// 100 columns. Every label in it comes from a fixed set, never from disk.
// A fleet's (onFleet) says so in its first line, and its disk line names
// what a fleet holds: the transcripts and etcd's records and histories.
func writeStatsText(w io.Writer, s *store.Stats, walked time.Duration, onFleet bool) error {
	o := statsObject(s, walked)
	p := o.Promotions
	var t textRows
	of, where := "", "under the root"
	if onFleet {
		of, where = " on a fleet", "in etcd"
	}
	t.line(fmt.Sprintf("sessdb stats%s at %s (%s walked in %.1fs)", of, s.At.Format(time.RFC3339), entries(s.Entries), walked.Seconds()))
	if s.Interrupted {
		t.line(fmt.Sprintf("INTERRUPTED: the figures cover only the %s read before the walk stopped", entries(s.Entries)))
	}
	t.line("")
	t.row("keys", s.Keys, nonzero(s.Layouts))
	if s.OtherEntries > 0 {
		t.row("  not keys", s.OtherEntries, "names "+where+" that are not a key")
	}
	t.row("  verdicts", -1, nonzero(s.Verdicts))
	t.row("", -1, "(what a job matching each key's own pi version, venue and model would get now)")
	t.line("")
	t.row("promotions", p.Entries, fmt.Sprintf("in the last %s, since %s", window(s.Window), s.At.Add(-s.Window).Format(time.RFC3339)))
	var cold []string
	for _, r := range p.ColdReasons {
		if r.Promotions > 0 {
			cold = append(cold, fmt.Sprintf("%s %d", r.Reason, r.Promotions))
		}
	}
	t.row("  promoted", p.Promoted, iec(p.Bytes)+" of transcripts")
	t.row("    resumed", p.Resumed, "")
	t.row("    cold", p.Cold, strings.Join(cold, "  "))
	var refusals []string
	for _, r := range p.Refusals {
		if r.Refusals > 0 {
			refusals = append(refusals, fmt.Sprintf("%s %d", r.Reason, r.Refusals))
		}
	}
	t.row("  refused", p.Refused, strings.Join(refusals, "  "))
	if p.Accepted > 0 {
		t.row("  accepted", p.Accepted, "transcripts an operator accepted (check --repair --accept)")
	}
	if p.Other > 0 {
		t.row("  other", p.Other, "outcomes this sessdb does not know")
	}
	var runs []string
	for _, r := range p.Runs {
		if n := r.Promotions + r.Refusals; n > 0 {
			runs = append(runs, fmt.Sprintf("%s %d", r.Run, n))
		}
	}
	t.row("  by run", -1, orDash(strings.Join(runs, "  ")))
	if p.TruncatedKeys > 0 {
		t.row("  truncated", p.TruncatedKeys, fmt.Sprintf("keys whose history (the last %d entries) is all inside the window: a lower bound", store.HistoryLimitForDump))
	}
	t.line("")
	if onFleet {
		t.row("disk", -1, fmt.Sprintf("transcripts %s  etcd records and histories %s", iec(s.TranscriptBytes), iec(s.EtcdBytes)))
	} else {
		t.row("disk", -1, fmt.Sprintf("transcripts %s  meta.db %s  legacy sidecars %s", iec(s.TranscriptBytes), iec(s.MetaDBBytes), iec(s.LegacyBytes)))
	}
	t.line("")

	dists := []struct {
		name  string
		d     *store.Distribution
		value func(int64) string
		bound func(int64) string
	}{
		{"transcript bytes", s.Bytes, iec, iecShort},
		{"resume chain", s.ResumeChain, itoa, itoa},
		{"context % of window", s.ContextPct, itoa, itoa},
	}
	// One width for the names of every table below, so they line up.
	nameWidth := 0
	for _, d := range dists {
		nameWidth = max(nameWidth, len(d.name)+2)
	}
	name := func(n string) string { return fmt.Sprintf("%-*s", nameWidth, "  "+n) }
	table := [][]string{{"", "keys", "p50", "p95", "max"}}
	for _, d := range dists {
		cells := []string{name(d.name), itoa(d.d.N)}
		for _, q := range []float64{0.50, 0.95, 1} {
			if v, ok := d.d.Quantile(q); ok {
				cells = append(cells, d.value(v))
			} else {
				cells = append(cells, "-")
			}
		}
		table = append(table, cells)
	}
	t.table(table)
	// The buckets: for each distribution, a header of bounds and the keys
	// in each bucket under it (not cumulative).
	t.line("")
	t.line("keys per bucket (at most the bound, above the bound before)")
	for _, d := range dists {
		head, counts := []string{name(d.name)}, []string{""}
		for i, n := range d.d.Counts {
			if i < len(d.d.Bounds) {
				head = append(head, "≤"+d.bound(d.d.Bounds[i]))
			} else {
				head = append(head, ">"+d.bound(d.d.Bounds[i-1]))
			}
			counts = append(counts, itoa(n))
		}
		t.table([][]string{head, counts})
	}
	_, err := io.WriteString(w, t.String())
	return err
}

// textWidth is the widest line the text report writes.
const textWidth = 100

// textRows builds the text report. Rows of (label, number, text) are
// aligned across the whole report; a table's columns within the table.
type textRows struct {
	lines []any // string, textRow
}

type textRow struct {
	label, num, text string
}

func (t *textRows) line(s string) { t.lines = append(t.lines, s) }

// row adds a row; num < 0 leaves the number column empty.
func (t *textRows) row(label string, num any, text string) {
	n := fmt.Sprint(num)
	if v, ok := num.(int); ok && v < 0 {
		n = ""
	}
	t.lines = append(t.lines, textRow{label, n, text})
}

// table adds rows of cells: the first column left-aligned, the others
// right-aligned, two spaces apart. Columns that would pass textWidth go
// to a block of their own below, under the same first column.
func (t *textRows) table(rows [][]string) {
	width := map[int]int{}
	for _, r := range rows {
		for i, c := range r {
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	for from := 1; from < len(width); {
		to, w := from, width[0]
		for to < len(width) && (to == from || w+2+width[to] <= textWidth) {
			w += 2 + width[to]
			to++
		}
		for _, r := range rows {
			var b strings.Builder
			b.WriteString(r[0] + strings.Repeat(" ", width[0]-utf8.RuneCountInString(r[0])))
			for i := from; i < to && i < len(r); i++ {
				b.WriteString("  " + strings.Repeat(" ", width[i]-utf8.RuneCountInString(r[i])) + r[i])
			}
			t.line(b.String())
		}
		from = to
	}
}

// wrapItems splits text at its double spaces, and an item wider than
// width at its single spaces, into the pieces a line may break between.
func wrapItems(text string, width int) []string {
	var out []string
	for _, item := range strings.Split(text, "  ") {
		if utf8.RuneCountInString(item) <= width {
			out = append(out, item)
			continue
		}
		line := ""
		for _, word := range strings.Fields(item) {
			if line != "" && utf8.RuneCountInString(line)+1+utf8.RuneCountInString(word) > width {
				out = append(out, line)
				line = ""
			}
			if line != "" {
				line += " "
			}
			line += word
		}
		out = append(out, line)
	}
	return out
}

func (t *textRows) String() string {
	lw, nw := 0, 0
	for _, l := range t.lines {
		if r, ok := l.(textRow); ok {
			lw, nw = max(lw, len(r.label)), max(nw, len(r.num))
		}
	}
	var b strings.Builder
	for _, l := range t.lines {
		switch l := l.(type) {
		case string:
			b.WriteString(strings.TrimRight(l, " ") + "\n")
		case textRow:
			// The text wraps at its double spaces, under itself, so that
			// a long list of labels stays within textWidth.
			indent := lw + 2 + nw + 2
			line := fmt.Sprintf("%-*s  %*s  ", lw, l.label, nw, l.num)
			for i, item := range wrapItems(l.text, textWidth-indent) {
				if i > 0 && utf8.RuneCountInString(line)+2+utf8.RuneCountInString(item) > textWidth {
					b.WriteString(strings.TrimRight(line, " ") + "\n")
					line = strings.Repeat(" ", indent) + item
					continue
				}
				if i > 0 {
					line += "  "
				}
				line += item
			}
			b.WriteString(strings.TrimRight(line, " ") + "\n")
		}
	}
	return b.String()
}

func entries(n int) string {
	if n == 1 {
		return "1 entry"
	}
	return fmt.Sprintf("%d entries", n)
}

// nonzero lists the tallies that are not zero, "label n" each.
func nonzero(ts []store.Tally) string {
	var out []string
	for _, t := range ts {
		if t.N > 0 {
			out = append(out, fmt.Sprintf("%s %d", t.Label, t.N))
		}
	}
	if len(out) == 0 {
		return "-"
	}
	return strings.Join(out, "  ")
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// window renders a duration without Go's trailing zero units: 24h, 90m.
func window(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// iec renders a byte count for people: 742 B, 3.1 KiB, 12.0 MiB.
func iec(n int64) string {
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	v, unit := float64(n)/1024, 0
	for v >= 1024 && unit < 5 {
		v, unit = v/1024, unit+1
	}
	return fmt.Sprintf("%.1f %ciB", v, "KMGTPE"[unit])
}

// iecShort renders a bucket bound, a power of two: 1K, 256K, 8M.
func iecShort(n int64) string {
	for _, u := range []struct {
		suffix string
		size   int64
	}{{"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}} {
		if n >= u.size && n%u.size == 0 {
			return itoa(n/u.size) + u.suffix
		}
	}
	return itoa(n)
}
