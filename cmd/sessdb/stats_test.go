package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/sample"
	"sessdb/store"
)

// The report, JSON and Prometheus output of stats on the shipped sample
// (judged an hour after its clock: a 24h window holds the long-chain
// key's five promotions and the resumable key's last), and the report on
// the damaged copy.
func TestStatsGolden(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
	}{
		{"stats.txt", []string{"stats"}},
		{"stats.json", []string{"stats", "--json"}},
		{"stats.prom", []string{"stats", "--prometheus"}},
		{"stats-week.txt", []string{"stats", "--since", "168h"}},
		{"stats-damaged.txt", []string{"stats"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			atSampleTime(t)
			root := copySample(t)
			if strings.Contains(c.name, "damaged") {
				damageSample(t, root)
			}
			code, out, errs := runCLI(t, append(c.args, root)...)
			if code != exitOK || errs != "" {
				t.Fatalf("exit %d\n%s%s", code, out, errs)
			}
			for i, line := range strings.Split(out, "\n") {
				if n := len([]rune(line)); n > 100 && !strings.HasSuffix(c.name, ".json") && !strings.HasPrefix(line, "# HELP") {
					t.Errorf("line %d is %d columns wide: %q", i+1, n, line)
				}
			}
			golden(t, c.name, out)
		})
	}
}

// statsOf runs stats --json and decodes it.
func statsOf(t *testing.T, args ...string) statsJSON {
	t.Helper()
	code, out, errs := runCLI(t, append([]string{"stats", "--json"}, args...)...)
	var s statsJSON
	if code != exitOK || strings.Count(out, "\n") != 1 {
		t.Fatalf("stats --json: exit %d\n%s%s", code, out, errs)
	}
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// expected is what stats must print for root, computed independently from
// the reports dump walks (store.InspectWith with every history entry):
// layouts, verdicts, the window's history entries, bytes on disk.
type expected struct {
	keys, other                           int
	layouts, verdicts                     map[string]int64
	entries, promoted, resumed, refused   int64
	promotedBytes, transcripts, meta, leg int64
	chains                                []int64
}

func expect(t testing.TB, root string, at time.Time, window time.Duration) expected {
	t.Helper()
	s, err := store.New(root, store.Options{Now: func() time.Time { return at }, Bounds: gates.Bounds{TTL: 14 * 24 * time.Hour, MaxBytes: 8 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	e := expected{layouts: map[string]int64{}, verdicts: map[string]int64{}}
	err = s.InspectWith(context.Background(), store.InspectOptions{History: db.HistoryLimit}, func(r store.KeyReport) error {
		if !store.ValidKey(r.Name) {
			e.other++
			return nil
		}
		e.keys++
		layout := string(r.Layout)
		if layout == "" {
			layout = "unknown"
		}
		e.layouts[layout]++
		v := "unknown"
		if r.Verdict != nil {
			v = r.Verdict.Reason
		}
		if v == store.Undetermined {
			v = r.Verdict.IfMatched
		}
		e.verdicts[v]++
		for _, h := range r.History {
			if h.At.Before(at.Add(-window)) {
				continue
			}
			e.entries++
			switch h.Outcome {
			case "promoted":
				e.promoted++
				e.promotedBytes += h.Bytes
				if h.Resumed {
					e.resumed++
				}
			default:
				e.refused++
			}
		}
		if r.Transcript != nil && r.Transcript.Regular {
			e.transcripts += r.Transcript.Bytes
		}
		if r.MetaPages != nil {
			e.meta += r.MetaPages.Bytes
		}
		for _, f := range r.LegacyFiles {
			if fi, err := os.Lstat(filepath.Join(root, r.Name, f)); err == nil && fi.Mode().IsRegular() && !strings.HasSuffix(f, ".incoming") {
				e.leg += fi.Size()
			}
		}
		if r.ResumeChain != nil {
			e.chains = append(e.chains, int64(*r.ResumeChain))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// check compares stats --json with what the reports say.
func (e expected) check(t testing.TB, s statsJSON) {
	t.Helper()
	got := expected{
		keys: s.Keys, other: s.OtherEntries, layouts: map[string]int64{}, verdicts: map[string]int64{},
		entries: s.Promotions.Entries, promoted: s.Promotions.Promoted, resumed: s.Promotions.Resumed, refused: s.Promotions.Refused,
		promotedBytes: s.Promotions.Bytes, transcripts: s.Disk.TranscriptBytes, meta: s.Disk.MetaDBBytes, leg: s.Disk.LegacyBytes,
	}
	for _, l := range s.Layouts {
		if l.Keys > 0 {
			got.layouts[l.Layout] = l.Keys
		}
	}
	for _, v := range s.Verdicts {
		if v.Keys > 0 {
			got.verdicts[v.Reason] = v.Keys
		}
	}
	want := e
	want.chains = nil
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("stats says\n%+v\nthe reports say\n%+v", got, want)
	}
	d := s.Distributions.ResumeChain
	var sum int64
	for _, c := range e.chains {
		sum += c
	}
	if d.Keys != int64(len(e.chains)) || d.Sum != sum || (len(e.chains) > 0 && *d.Max != slices.Max(e.chains)) {
		t.Errorf("resume chain distribution %+v, want %d values summing to %d", d, len(e.chains), sum)
	}
	if s.Keys+s.OtherEntries != s.Entries || s.Promotions.Promoted != s.Promotions.Resumed+s.Promotions.Cold {
		t.Errorf("totals do not add up: %+v", s)
	}
}

// stats agrees with the reports dump prints, on the sample and on its
// damaged copy, for a day's and a long window.
func TestStatsAgreesWithTheReports(t *testing.T) {
	atSampleTime(t)
	for _, damaged := range []bool{false, true} {
		root := copySample(t)
		if damaged {
			damageSample(t, root)
		}
		for _, w := range []time.Duration{24 * time.Hour, 1000 * time.Hour} {
			s := statsOf(t, "--since", w.String(), root)
			expect(t, root, clock(), w).check(t, s)
			if s.Promotions.Entries == 0 && w > 24*time.Hour {
				t.Errorf("damaged=%v: no promotion in %v: the sample's histories were not read", damaged, w)
			}
		}
	}
}

// statsFamilies are the metric families of docs/stats.md: type and the
// label names of their samples.
var statsFamilies = map[string]struct {
	typ    dto.MetricType
	labels []string
}{
	"sessdb_keys":                      {dto.MetricType_GAUGE, []string{"layout"}},
	"sessdb_other_entries":             {dto.MetricType_GAUGE, nil},
	"sessdb_keys_by_verdict":           {dto.MetricType_GAUGE, []string{"reason"}},
	"sessdb_promotions":                {dto.MetricType_GAUGE, []string{"outcome", "start"}},
	"sessdb_promotions_by_run":         {dto.MetricType_GAUGE, []string{"outcome", "run"}},
	"sessdb_promoted_bytes":            {dto.MetricType_GAUGE, nil},
	"sessdb_history_truncated_keys":    {dto.MetricType_GAUGE, nil},
	"sessdb_transcript_size_bytes":     {dto.MetricType_HISTOGRAM, nil},
	"sessdb_resume_chain":              {dto.MetricType_HISTOGRAM, nil},
	"sessdb_context_occupancy_percent": {dto.MetricType_HISTOGRAM, nil},
	"sessdb_transcript_bytes":          {dto.MetricType_GAUGE, nil},
	"sessdb_meta_bytes":                {dto.MetricType_GAUGE, []string{"format"}},
	"sessdb_stats_walk_seconds":        {dto.MetricType_GAUGE, nil},
	"sessdb_stats_window_seconds":      {dto.MetricType_GAUGE, nil},
	"sessdb_stats_interrupted":         {dto.MetricType_GAUGE, nil},
}

// The Prometheus output parses with Prometheus's own text parser into
// exactly the documented families, types and label sets, every series of
// the bounded label sets present and no key among the label values; its
// figures are the JSON's.
func TestStatsPrometheusParses(t *testing.T) {
	atSampleTime(t)
	root := copySample(t)
	damageSample(t, root) // a link and a damaged meta.db: labels still bounded
	code, out, errs := runCLI(t, "stats", "--prometheus", "--since", "1000h", root)
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	checkStatsProm(t, out, statsOf(t, "--since", "1000h", root))
}

// checkStatsProm parses stats --prometheus's out with Prometheus's own
// text parser and checks its families, types and label sets, and that
// its figures are s's, the JSON's of the same store.
func checkStatsProm(t *testing.T, out string, s statsJSON) {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for n := range fams {
		names = append(names, n)
	}
	var want []string
	for n := range statsFamilies {
		want = append(want, n)
	}
	slices.Sort(names)
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Fatalf("families %v\nwant %v", names, want)
	}
	bytesB, chainB, pctB := store.StatBounds()
	bounds := map[string][]int64{"sessdb_transcript_size_bytes": bytesB, "sessdb_resume_chain": chainB, "sessdb_context_occupancy_percent": pctB}
	sets := map[string][]string{"layout": store.StatLayouts(), "reason": store.StatReasons(), "outcome": store.StatOutcomes(),
		"start": store.StatStarts(), "run": store.StatRuns(), "format": {"db", "legacy", "etcd"}}
	aKey := regexp.MustCompile(`[0-9a-f]{32}`)
	values := map[string]float64{} // name{labels} -> value
	for name, f := range fams {
		spec := statsFamilies[name]
		if f.GetType() != spec.typ || f.GetHelp() == "" {
			t.Errorf("%s: type %v help %q, want type %v and a help text", name, f.GetType(), f.GetHelp(), spec.typ)
		}
		// Every combination of the label sets, once.
		combos := 1
		for _, l := range spec.labels {
			combos *= len(sets[l])
		}
		if len(f.GetMetric()) != combos {
			t.Errorf("%s: %d series, want %d", name, len(f.GetMetric()), combos)
		}
		seen := map[string]bool{}
		for _, m := range f.GetMetric() {
			var labels []string
			for _, lp := range m.GetLabel() {
				labels = append(labels, lp.GetName())
				if !slices.Contains(sets[lp.GetName()], lp.GetValue()) || aKey.MatchString(lp.GetValue()) {
					t.Errorf("%s: label %s=%q is not in its set", name, lp.GetName(), lp.GetValue())
				}
			}
			if !slices.Equal(labels, spec.labels) {
				t.Errorf("%s: labels %v, want %v", name, labels, spec.labels)
			}
			id := fmt.Sprint(m.GetLabel())
			if seen[id] {
				t.Errorf("%s: series %s twice", name, id)
			}
			seen[id] = true
			switch spec.typ {
			case dto.MetricType_GAUGE:
				values[name] += m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				var les []int64
				var last uint64
				for _, b := range h.GetBucket() {
					if math.IsInf(b.GetUpperBound(), 1) {
						if b.GetCumulativeCount() != h.GetSampleCount() {
							t.Errorf("%s: +Inf bucket %d, count %d", name, b.GetCumulativeCount(), h.GetSampleCount())
						}
						continue
					}
					les = append(les, int64(b.GetUpperBound()))
					if b.GetCumulativeCount() < last || b.GetCumulativeCount() > h.GetSampleCount() {
						t.Errorf("%s: buckets not cumulative: %v", name, h.GetBucket())
					}
					last = b.GetCumulativeCount()
				}
				if !slices.Equal(les, bounds[name]) {
					t.Errorf("%s: bucket bounds %v, want %v", name, les, bounds[name])
				}
				values[name+"_count"], values[name+"_sum"] = float64(h.GetSampleCount()), h.GetSampleSum()
			}
		}
	}
	for name, want := range map[string]int64{
		"sessdb_keys": int64(s.Keys), "sessdb_keys_by_verdict": int64(s.Keys), "sessdb_other_entries": int64(s.OtherEntries),
		"sessdb_promotions": s.Promotions.Entries, "sessdb_promotions_by_run": s.Promotions.Entries,
		"sessdb_promoted_bytes":              s.Promotions.Bytes,
		"sessdb_transcript_size_bytes_count": s.Distributions.Bytes.Keys, "sessdb_transcript_size_bytes_sum": s.Distributions.Bytes.Sum,
		"sessdb_resume_chain_count": s.Distributions.ResumeChain.Keys, "sessdb_context_occupancy_percent_sum": s.Distributions.ContextPct.Sum,
		"sessdb_transcript_bytes": s.Disk.TranscriptBytes, "sessdb_meta_bytes": s.Disk.MetaDBBytes + s.Disk.LegacyBytes + s.Disk.EtcdBytes,
		"sessdb_stats_window_seconds": int64(s.WindowSeconds), "sessdb_stats_interrupted": 0,
	} {
		if values[name] != float64(want) {
			t.Errorf("%s = %v, the JSON says %d", name, values[name], want)
		}
	}
	if s.Promotions.Entries == 0 || s.Keys == 0 {
		t.Fatalf("nothing counted: %+v", s)
	}
}

// stats changes nothing: not on the shipped sample, not on a damaged copy.
func TestStatsIsReadOnly(t *testing.T) {
	atSampleTime(t)
	damaged := copySample(t)
	damageSample(t, damaged)
	for _, root := range []string{filepath.Join("..", "..", "testdata", "sessions"), damaged} {
		before := fingerprint(t, root)
		for _, args := range [][]string{{"stats"}, {"stats", "--json"}, {"stats", "--prometheus"}, {"stats", "--since", "10000h", "--json"}} {
			code, out, errs := runCLI(t, append(args, root)...)
			if code != exitOK || out == "" {
				t.Fatalf("%v: exit %d\n%s%s", args, code, out, errs)
			}
			if after := fingerprint(t, root); after != before {
				t.Fatalf("%v changed %s:\nbefore:\n%s\nafter:\n%s", args, root, before, after)
			}
		}
	}
}

func TestStatsExitStatuses(t *testing.T) {
	atSampleTime(t)
	root := copySample(t)
	for _, c := range []struct {
		args []string
		want string // in stderr
	}{
		{[]string{"--since", "-1h"}, "--since"},
		{[]string{"--since", "0s"}, "--since"},
		{[]string{"--since", "tomorrow"}, "since"},
		{[]string{"--since", "24"}, "since"},
		{[]string{"--since", ""}, "since"},
		{[]string{"--json", "--prometheus"}, "--prometheus"},
		{[]string{root, "extra"}, "unexpected argument"},
	} {
		code, out, errs := runCLI(t, append(append([]string{"stats"}, c.args...), root)...)
		if code != exitUsage || out != "" || !strings.Contains(errs, c.want) || strings.Count(errs, "\n") != 1 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2 and one line naming %s", c.args, code, out, errs, c.want)
		}
	}
	// A root that cannot be read is a fault, with nothing on stdout.
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o600)
	for _, r := range []string{filepath.Join(t.TempDir(), "nowhere"), file} {
		for _, f := range []string{"--json", "--prometheus", "--since=1h"} {
			if code, out, errs := runCLI(t, "stats", f, r); code != exitFault || out != "" || errs == "" {
				t.Errorf("stats %s %s: exit %d, stdout %q, stderr %q; want 1", f, r, code, out, errs)
			}
		}
	}
	// PI_SESSIONS_DIR and --sessions-dir name the root as for every walk.
	t.Setenv("PI_SESSIONS_DIR", root)
	if s := statsOf(t); s.Keys != 5 {
		t.Errorf("PI_SESSIONS_DIR: %d keys", s.Keys)
	}
	t.Setenv("PI_SESSIONS_DIR", "")
	if s := statsOf(t, "--sessions-dir", root); s.Keys != 5 {
		t.Errorf("--sessions-dir: %d keys", s.Keys)
	}
	if code, _, errs := runCLI(t, "stats"); code != exitUsage || !strings.Contains(errs, "PI_SESSIONS_DIR") {
		t.Errorf("no root: exit %d %q", code, errs)
	}

	code, out, errs := runCLI(t, "stats", "-h")
	if code != exitOK || errs != "" || !strings.Contains(out, "example:\n  sessdb stats") || !strings.Contains(out, "exit status:") {
		t.Errorf("stats -h: exit %d\n%s", code, out)
	}
	if _, out, _ := runCLI(t, "help"); !strings.Contains(out, "  stats ") {
		t.Errorf("help does not list stats:\n%s", out)
	}
}

// Ctrl-C stops the walk: what was read is printed, marked interrupted in
// every format, and the exit status is 130.
func TestStatsInterrupt(t *testing.T) {
	atSampleTime(t)
	root := copySample(t)
	prev := interruptContext
	defer func() { interruptContext = prev }()
	interruptContext = cancelledContext
	for args, mark := range map[string]string{
		"stats":              "INTERRUPTED: the figures cover only the 0 entries read",
		"stats --json":       `"interrupted":true`,
		"stats --prometheus": "\nsessdb_stats_interrupted 1\n",
	} {
		code, out, errs := runCLI(t, append(strings.Fields(args), root)...)
		if code != exitInterrupted || !strings.Contains(out, mark) || !strings.Contains(errs, "interrupted after 0 entries") {
			t.Errorf("%s: exit %d\n%s%s", args, code, out, errs)
		}
	}
	// Without the interrupt the same outputs say so.
	interruptContext = prev
	if s := statsOf(t, root); s.Interrupted {
		t.Error("an uninterrupted walk is marked interrupted")
	}
}

// Progress goes to stderr as dump's does, never into stdout.
func TestStatsProgress(t *testing.T) {
	atSampleTime(t)
	root := copySample(t)
	forceProgress = true
	defer func() { forceProgress = false }()
	code, out, errs := runCLI(t, "stats", "--prometheus", root)
	if code != exitOK || !strings.Contains(errs, "\rstats 6/6") || strings.Contains(out, "\r") {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
}

// statsOnGenerated checks stats on root, genSessions' n keys (1,000 under
// the race detector, 10,000 without): the figures agree with the reports,
// scale with the sample's, and the root is unchanged. Its time per key is
// logged; the figure to quote is BenchmarkStats's. TestTenThousandKeys
// calls it on its own root, before its reap: it was a test of its own,
// TestStatsTenThousandKeys, that generated the same 1,000 keys again
// (6.1 s of cmd/sessdb's -race run under load, 2.3 s idle).
func statsOnGenerated(t *testing.T, root string, n int) {
	t.Helper()
	before := fingerprint(t, root)
	start := time.Now()
	s := statsOf(t, "--since", "1000h", root)
	d := time.Since(start)
	t.Logf("stats --json on %d keys: %v, %.0f µs/key", n, d.Round(time.Millisecond), float64(d.Microseconds())/float64(n))
	expect(t, root, clock(), 1000*time.Hour).check(t, s)

	// Each sample key is copied n/5 times: the figures are the sample's
	// times n/5, but for the ages (the generated files' mtimes differ).
	sm := statsOf(t, "--since", "1000h", copySample(t))
	k := int64(n / 5)
	if int64(s.Keys) != k*int64(sm.Keys) || s.Promotions.Entries != k*sm.Promotions.Entries ||
		s.Promotions.Bytes != k*sm.Promotions.Bytes || s.Disk.MetaDBBytes != k*sm.Disk.MetaDBBytes ||
		s.Distributions.ResumeChain.Sum != k*sm.Distributions.ResumeChain.Sum {
		t.Errorf("%d keys:\n%+v\nthe sample:\n%+v", n, s, sm)
	}
	if after := fingerprint(t, root); after != before {
		t.Fatal("stats changed the generated root")
	}
}

// BenchmarkStats times stats beside dump on the same roots, the shipped
// sample and a generated root of 10,000 keys (genSessions: the sample's
// key dirs copied), warm cache, both through the CLI's run with output
// discarded. Reported per entry under the root: µs/key.
//
//	go test -run '^$' -bench BenchmarkStats -benchtime 5x ./cmd/sessdb
func BenchmarkStats(b *testing.B) {
	prev := clock
	clock = func() time.Time { return sample.Time.Add(time.Hour) }
	defer func() { clock = prev }()
	for _, v := range []string{"PI_SESSIONS_DIR", "PI_SESSIONS_TTL_DAYS", "PI_SESSION_MAX_BYTES", "PI_SESSION_MAX_AGE_DAYS", "PI_SESSION_MAX_RESUME_CHAIN", "PI_SESSION_MAX_CONTEXT_PCT"} {
		b.Setenv(v, "")
	}
	big := filepath.Join(b.TempDir(), "sessions")
	genSessions(b, big, 10000)
	roots := []struct {
		name, dir string
		entries   int
	}{{"sample", copySample(b), 6}, {"10k", big, 10001}}
	for _, r := range roots {
		for _, args := range [][]string{{"stats"}, {"stats", "--prometheus"}, {"dump"}, {"dump", "--json"}} {
			b.Run(r.name+"/"+strings.Join(args, "_"), func(b *testing.B) {
				argv := append(slices.Clone(args), r.dir)
				run(argv, io.Discard, io.Discard) // warm the cache
				b.ResetTimer()
				for range b.N {
					if code := run(argv, io.Discard, io.Discard); code != exitOK {
						b.Fatalf("%v: exit %d", argv, code)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*r.entries), "µs/key")
			})
		}
	}
}

// The Prometheus packages are the tests' alone: the sessdb binary writes
// the text format itself and links none of them. (Protobuf it does link,
// since a fleet's etcd client speaks gRPC; the Prometheus data model is
// the protobuf-generated package client_model, named here.)
func TestStatsBinaryLinksNoPrometheusPackage(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to list the binary's packages")
	}
	out, err := exec.Command(goTool, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "\nsessdb/store\n") {
		t.Fatalf("go list -deps did not list the binary's packages:\n%s", out)
	}
	for _, p := range strings.Fields(string(out)) {
		if strings.Contains(p, "prometheus") || strings.Contains(p, "client_model") {
			t.Errorf("the binary links %s", p)
		}
	}
}

// The report stays within 100 columns however many labels are not zero
// and however large the counts: a long list wraps under itself.
func TestStatsTextFitsItsWidth(t *testing.T) {
	s := &store.Stats{At: sample.Time, Window: 24 * time.Hour, Interrupted: true, Entries: 1e9, Keys: 1e9, OtherEntries: 1e9,
		Promotions:      store.Promotions{Entries: map[store.PromotionKind]int64{}, Bytes: math.MaxInt64, TruncatedKeys: 1e9},
		TranscriptBytes: math.MaxInt64, MetaDBBytes: math.MaxInt64, LegacyBytes: math.MaxInt64}
	for _, l := range store.StatLayouts() {
		s.Layouts = append(s.Layouts, store.Tally{Label: l, N: 1e12})
	}
	for _, r := range store.StatReasons() {
		s.Verdicts = append(s.Verdicts, store.Tally{Label: r, N: 1e12})
	}
	for _, o := range store.StatOutcomes() {
		for _, st := range store.StatStarts() {
			for _, r := range store.StatRuns() {
				s.Promotions.Entries[store.PromotionKind{Outcome: o, Start: st, Run: r}] = 1e12
			}
		}
	}
	bytesB, chainB, pctB := store.StatBounds()
	for _, d := range []struct {
		to     **store.Distribution
		bounds []int64
	}{{&s.Bytes, bytesB}, {&s.ResumeChain, chainB}, {&s.ContextPct, pctB}} {
		*d.to = &store.Distribution{Bounds: d.bounds, Counts: make([]int64, len(d.bounds)+1), N: 1e12, Sum: math.MaxInt64}
		for i := range (*d.to).Counts {
			(*d.to).Counts[i] = 1e11
		}
	}
	var b strings.Builder
	if err := writeStatsText(&b, s, time.Hour, false); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for i, line := range strings.Split(out, "\n") {
		if n := len([]rune(line)); n > 100 {
			t.Errorf("line %d is %d columns wide: %q", i+1, n, line)
		}
	}
	// Nothing was dropped by the wrapping.
	perOutcome := fmt.Sprintf("run-incomplete %d", int64(len(store.StatStarts())*len(store.StatRuns()))*1e12)
	for _, want := range append(store.StatReasons(), "INTERRUPTED", "truncated", "other", perOutcome, "(what a job matching") {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	t.Log("\n" + out)
}

// stats given a sessions root on a fleet worker's environment counts the
// root, and says on stderr that these are the root's figures, naming it
// and where it came from: every other command refuses a root and the
// fleet together, and a PI_SESSIONS_DIR left from before a move to the
// fleet printed the old root's figures without a word. An interrupted
// walk's partial figures carry the note too.
func TestStatsOnARootWithAFleetEnvironmentSaysWhichItCounted(t *testing.T) {
	clearEnv(t)
	t.Setenv("PI_SESSIONS_ETCD_ENDPOINTS", "http://127.0.0.1:2379")
	t.Setenv("PI_SESSIONS_TRANSCRIPTS_DIR", t.TempDir())
	root := copySample(t)
	for _, c := range []struct {
		args []string
		env  string
		from string
	}{
		{[]string{"stats", "--log-format", "console", root}, "", "the DIR argument"},
		{[]string{"stats", "--log-format", "console"}, root, "PI_SESSIONS_DIR"},
	} {
		t.Setenv("PI_SESSIONS_DIR", c.env)
		code, out, errs := runCLI(t, c.args...)
		if code != exitOK || !strings.Contains(out, "keys") {
			t.Fatalf("%v: exit %d, stdout %q, stderr %q", c.args, code, out, errs)
		}
		if !strings.Contains(errs, "not the fleet's") || !strings.Contains(errs, root) || !strings.Contains(errs, c.from) {
			t.Errorf("%v: stderr %q, want a note that the root %s (%s) was counted, not the fleet", c.args, errs, root, c.from)
		}
	}
	// An interrupted walk's figures are the root's too: the note is said
	// with them, beside the interruption.
	t.Setenv("PI_SESSIONS_DIR", "")
	prev := interruptContext
	interruptContext = cancelledContext
	code, out, errs := runCLI(t, "stats", "--log-format", "console", root)
	interruptContext = prev
	if code != exitInterrupted || !strings.Contains(out, "INTERRUPTED") || !strings.Contains(errs, "not the fleet's") || !strings.Contains(errs, "interrupted after 0 entries") {
		t.Errorf("stats DIR interrupted: exit %d, stdout %q, stderr %q; want exit 130, the partial figures and the note that they are the root's", code, out, errs)
	}
	// Without the fleet's environment, no note.
	clearEnv(t)
	if code, _, errs := runCLI(t, "stats", root); code != exitOK || errs != "" {
		t.Errorf("stats DIR alone: exit %d, stderr %q", code, errs)
	}
}

// docs/stats.md's synopsis is the command's usage line: it lacked --at,
// which the page's own sample report is run with.
func TestStatsDocSynopsisIsTheUsage(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "stats.md"))
	if err != nil {
		t.Fatal(err)
	}
	var synopsis string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "sessdb stats [") {
			synopsis = l
			break
		}
	}
	if want := "sessdb " + cmdStats.usage; synopsis != want {
		t.Errorf("docs/stats.md's synopsis\n%q\nthe usage line\n%q", synopsis, want)
	}
	for _, flag := range []string{"--since", "--at"} {
		if !strings.Contains(string(b), "- `"+flag) {
			t.Errorf("docs/stats.md does not describe %s", flag)
		}
	}
}
