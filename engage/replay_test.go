package engage

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Fixture 10's table in EXPECTED.md, request for request. The switch and
// re-billed figures are derived here from the table's own columns and the
// fixture's recorded usage, not typed in.
func TestReplayFixture10(t *testing.T) {
	tr := readFixture(t, "10-sticky-engagement.jsonl")
	rp, err := tr.Replay(DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		entry             string
		estimate          string // "null" where pi reports null
		reset             bool
		stateless, sticky bool
	}{
		{"7b89296c", "18", true, false, false},
		{"03cc0f27", "172502", false, false, false},
		{"766bad07", "172412", false, false, false},
		{"7dc59a3a", "183732", false, true, true},
		{"470b9805", "131734", false, false, true},
		{"cf84b683", "131776", false, false, true},
		{"08ceac39", "131900", false, false, true},
		{"53e8eb43", "null", true, false, false},
		{"3fffc830", "9933", false, false, false},
	}
	if len(rp.Rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(rp.Rows), len(want))
	}
	for i, r := range rp.Rows {
		w := want[i]
		est := "null"
		if rd := r.Before.Reading(); rd.Known {
			est = fmt.Sprint(rd.Tokens)
		}
		if r.N != i+1 || r.Entry != w.entry || est != w.estimate || (r.Event != None) != w.reset || r.Stateless != w.stateless || r.Sticky != w.sticky {
			t.Errorf("row %d: %s %s reset=%v stateless=%v sticky=%v; want %+v", r.N, r.Entry, est, r.Event != None, r.Stateless, r.Sticky, w)
		}
	}

	prompts := recordedPrompts(t, fixture(t, "10-sticky-engagement.jsonl"))
	var wantStateless, wantSticky Policy
	for i, w := range want {
		for _, p := range []struct {
			pol         *Policy
			now, before bool
		}{{&wantStateless, w.stateless, i > 0 && want[i-1].stateless}, {&wantSticky, w.sticky, i > 0 && want[i-1].sticky}} {
			if p.now {
				p.pol.Pruned++
			}
			if i > 0 && !w.reset && p.now != p.before {
				p.pol.Switches++
				p.pol.Rebilled += prompts[w.entry]
			}
		}
	}
	if rp.Stateless != wantStateless || rp.Sticky != wantSticky {
		t.Errorf("stateless %+v, sticky %+v; want %+v, %+v", rp.Stateless, rp.Sticky, wantStateless, wantSticky)
	}
	if wantSticky.Switches >= wantStateless.Switches {
		t.Errorf("the sticky rule should switch less than the stateless check on the flap fixture")
	}
	if rp.Modelled || rp.Threshold != 183616 {
		t.Errorf("modelled %v, threshold %d", rp.Modelled, rp.Threshold)
	}
}

// recordedPrompts reads each assistant's input+cacheRead+cacheWrite with
// encoding/json.
func recordedPrompts(t *testing.T, path string) map[string]int64 {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for line := range bytes.Lines(data) {
		var e struct {
			ID      string
			Message struct {
				Usage struct{ Input, CacheRead, CacheWrite int64 }
			}
		}
		if json.Unmarshal(line, &e) == nil {
			out[e.ID] = e.Message.Usage.Input + e.Message.Usage.CacheRead + e.Message.Usage.CacheWrite
		}
	}
	return out
}

// A transcript recorded raw, replayed with a modelled pruned ratio of 0.5.
// Window 1000, reserve 100: threshold 900. Each request follows a one-token
// user message, and answer n reports usage a(n) = 500, 950, 1000, 1050, 1100
// (all of it cacheRead, so each answer's prompt is its usage). The reading
// before request n is a(n-1), halved if request n-1 went out pruned under
// the policy, plus 1:
//
//	stateless: 1, 501, 951 (pruned), 500+1 (raw), 1050+1 (pruned): flaps,
//	           switching at 3, 4, 5 and re-billing 500 + 1050 + 550;
//	sticky:    1, 501, 951 (pruned), 500+1, 525+1, all pruned from 3 on:
//	           one switch, re-billing 500.
func TestReplayModelledRatio(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}` + "\n")
	parent := "null"
	for i, u := range []int{500, 950, 1000, 1050, 1100} {
		fmt.Fprintf(&b, `{"type":"message","id":"u%d","parentId":%s,"message":{"role":"user","content":"abcd"}}`+"\n", i, parent)
		fmt.Fprintf(&b, `{"type":"message","id":"a%d","parentId":"u%d","message":{"role":"assistant","content":[],"usage":{"input":0,"output":0,"cacheRead":%d,"cacheWrite":0,"totalTokens":%d},"stopReason":"stop"}}`+"\n", i, i, u, u)
		parent = fmt.Sprintf(`"a%d"`, i)
	}
	tr, err := Read(strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ratio                         float64
		stateless, sticky             string
		statelessReads, stickyReads   []int64
		statelessPolicy, stickyPolicy Policy
	}{
		{1, "FFTTT", "FFTTT", []int64{1, 501, 951, 1001, 1051}, []int64{1, 501, 951, 1001, 1051}, Policy{3, 1, 1000}, Policy{3, 1, 1000}},
		{0.5, "FFTFT", "FFTTT", []int64{1, 501, 951, 501, 1051}, []int64{1, 501, 951, 501, 526}, Policy{2, 3, 2100}, Policy{3, 1, 500}},
	} {
		rp, err := tr.Replay(Options{Window: 1000, Reserve: 100, PrunedRatio: c.ratio})
		if err != nil {
			t.Fatal(err)
		}
		var st, sk []byte
		var sr, kr []int64
		for _, r := range rp.Rows {
			st, sk = append(st, tfBool(r.Stateless)), append(sk, tfBool(r.Sticky))
			sr, kr = append(sr, r.StatelessReading.Tokens), append(kr, r.StickyReading.Tokens)
		}
		if string(st) != c.stateless || string(sk) != c.sticky || !slices.Equal(sr, c.statelessReads) || !slices.Equal(kr, c.stickyReads) {
			t.Errorf("ratio %v: stateless %s %v, sticky %s %v; want %s %v, %s %v", c.ratio, st, sr, sk, kr, c.stateless, c.statelessReads, c.sticky, c.stickyReads)
		}
		if rp.Stateless != c.statelessPolicy || rp.Sticky != c.stickyPolicy {
			t.Errorf("ratio %v: policies %+v %+v, want %+v %+v", c.ratio, rp.Stateless, rp.Sticky, c.statelessPolicy, c.stickyPolicy)
		}
		if rp.Modelled != (c.ratio != 1) {
			t.Errorf("ratio %v: modelled = %v", c.ratio, rp.Modelled)
		}
		// The estimate column stays as recorded whatever the model.
		if rp.Rows[3].Before.Tokens != 1001 {
			t.Errorf("ratio %v: recorded estimate of request 4 = %d, want 1001", c.ratio, rp.Rows[3].Before.Tokens)
		}
	}
}

func tfBool(b bool) byte {
	if b {
		return 'T'
	}
	return 'F'
}

func TestReplayOptions(t *testing.T) {
	tr := readFixture(t, "01-normal-multiturn.jsonl")
	// Each refusal names the option at fault: the bare ErrOptions read
	// alike for a zero Options, a reserve above the window and a ratio
	// out of range.
	for _, c := range []struct {
		o    Options
		says string
	}{
		{Options{}, "window 0 is not above reserve 0"},
		{Options{Window: 100, Reserve: 100}, "window 100 is not above reserve 100"},
		{Options{Window: 100, Reserve: -1}, "reserve -1 is negative"},
		{Options{Window: 1000, PrunedRatio: 1.5}, "pruned ratio 1.5"},
		{Options{Window: 1000, PrunedRatio: -0.5}, "pruned ratio -0.5"},
		{Options{Window: 1000, PrunedRatio: math.NaN()}, "pruned ratio NaN"},
		{Options{Window: MaxWindow + 1}, "above MaxWindow"},
		{Options{Window: math.MaxInt64, Reserve: 1}, "above MaxWindow"},
	} {
		if _, err := tr.Replay(c.o); !errors.Is(err, ErrOptions) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("Replay(%+v) = %v, want ErrOptions saying %q", c.o, err, c.says)
		}
	}
	// EXPECTED.md: fixture 01 is never engaged.
	rp, err := tr.Replay(DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if rp.Stateless.Pruned+rp.Sticky.Pruned != 0 || len(rp.Rows) != 7 {
		t.Errorf("fixture 01: %+v %+v over %d rows, want never engaged over 7 requests", rp.Stateless, rp.Sticky, len(rp.Rows))
	}
}

// A usage pi reads as 1e300 is clamped to 2^62 here; pi compares it with
// the threshold as the float it is, so it crosses any threshold, and so
// must the clamped reading: at the largest window accepted it does.
func TestHugeUsageCrossesTheLargestWindow(t *testing.T) {
	tr := read(t, v3,
		msgLine("u1", "", `{"role":"user","content":"go"}`),
		msgLine("a1", "u1", `{"role":"assistant","content":[],"usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":1e300},"stopReason":"stop"}`),
		msgLine("a2", "a1", asst(10, "stop")))
	rp, err := tr.Replay(Options{Window: MaxWindow})
	if err != nil {
		t.Fatal(err)
	}
	if r := rp.Rows[1]; !r.Stateless || !r.Sticky {
		t.Errorf("request 2 after a usage of 1e300: stateless %v, sticky %v at window %d; pi crosses", r.Stateless, r.Sticky, rp.Window)
	}
}

// The --json form: one object per request with exactly the documented
// keys (docs/json.md), then {"summary": {...}}.
func TestWriteJSON(t *testing.T) {
	rp, err := readFixture(t, "10-sticky-engagement.jsonl").Replay(DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := rp.WriteJSON(&out, &Prices{CacheRead: 0.3, CacheWrite: 3.75}); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(&out)
	var objs []map[string]any
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		objs = append(objs, m)
	}
	if len(objs) != len(rp.Rows)+1 {
		t.Fatalf("%d objects, want %d rows and a summary", len(objs), len(rp.Rows))
	}
	for i, m := range objs[:len(rp.Rows)] {
		if got := strings.Join(slices.Sorted(maps.Keys(m)), ","); got != "entry,estimate,model_change,request,reset,stateless,stateless_estimate,sticky,sticky_estimate" {
			t.Errorf("row %d keys %s", i+1, got)
		}
		if m["request"] != float64(i+1) {
			t.Errorf("row %d: request %v", i+1, m["request"])
		}
	}
	if objs[7]["estimate"] != nil || objs[7]["reset"] != true || objs[3]["estimate"] != float64(183732) {
		t.Errorf("rows 4 and 8: %v %v", objs[3], objs[7])
	}
	sum, ok := objs[len(objs)-1]["summary"].(map[string]any)
	if !ok || len(objs[len(objs)-1]) != 1 {
		t.Fatalf("the last line is not {\"summary\": {...}}: %v", objs[len(objs)-1])
	}
	for _, k := range []string{"requests", "switches_stateless", "switches_sticky", "rebilled_stateless", "rebilled_sticky", "window", "reserve", "threshold", "pruned_ratio"} {
		if _, ok := sum[k]; !ok {
			t.Errorf("summary lacks %q: %v", k, sum)
		}
	}
	if sum["modelled"] != false || sum["switches_stateless"] != float64(rp.Stateless.Switches) {
		t.Errorf("summary %v", sum)
	}
	// Money has 4 decimals, never 0.45409...0001.
	wantCost, _ := strconv.ParseFloat(fmt.Sprintf("%.4f", float64(rp.Sticky.Rebilled)*(3.75-0.3)/1e6), 64)
	if sum["extra_cost_sticky_usd"] != wantCost {
		t.Errorf("extra_cost_sticky_usd %v, want %.4f", sum["extra_cost_sticky_usd"], wantCost)
	}
}

// The table labels a modelled replay as such, above the table and on every
// modelled summary figure; a replay as recorded says nothing is modelled.
func TestWriteTableLabelsModel(t *testing.T) {
	tr := readFixture(t, "10-sticky-engagement.jsonl")
	for _, ratio := range []float64{1, 0.6} {
		rp, err := tr.Replay(Options{Window: DefaultWindow, Reserve: DefaultReserve, PrunedRatio: ratio})
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := rp.WriteTable(&out, nil); err != nil {
			t.Fatal(err)
		}
		s := out.String()
		modelled := strings.Contains(s, "MODELLED") && strings.Contains(s, "prefix switches (modelled)")
		if modelled != (ratio != 1) || (ratio == 1 && !strings.Contains(s, "no figure below is modelled")) {
			t.Errorf("ratio %v: table\n%s", ratio, s)
		}
		if !strings.Contains(s, "    8  53e8eb43       20   unknown  compaction") {
			t.Errorf("ratio %v: request 8 not shown as unknown after the compaction:\n%s", ratio, s)
		}
		for _, line := range strings.Split(s, "\n") {
			if strings.HasSuffix(line, " ") {
				t.Errorf("trailing space in %q", line)
			}
		}
	}
}

// A Transcript does not change after Read: replays and request lists may
// run concurrently (checked under -race).
func TestTranscriptConcurrentUse(t *testing.T) {
	tr := readFixture(t, "03-overflow-recovery.jsonl")
	want, _ := tr.Replay(DefaultOptions())
	done := make(chan *Replay, 8)
	for i := 0; i < cap(done); i++ {
		go func() {
			tr.Requests()
			rp, _ := tr.Replay(Options{Window: DefaultWindow, Reserve: DefaultReserve, PrunedRatio: 0.5})
			done <- rp
		}()
	}
	for i := 0; i < cap(done); i++ {
		if rp := <-done; len(rp.Rows) != len(want.Rows) {
			t.Errorf("%d rows, want %d", len(rp.Rows), len(want.Rows))
		}
	}
}

// An answer that failed records no usage: the provider cached nothing for
// it. Window 1000, reserve 100 (threshold 900). Request 1 reports 950, so
// request 2 goes out pruned under both policies (a switch) and fails with
// all-zero usage; request 3, a retry on the failed answer, still anchors on
// 950 and goes out pruned too, and is the request that wrote the pruned
// prefix to the cache: 10 input and 700 cacheWrite, re-billed once.
func TestReplayBillsASwitchWhereTheCacheIsWritten(t *testing.T) {
	tr := read(t, v3,
		msgLine("u1", "", `{"role":"user","content":"go"}`),
		msgLine("a1", "u1", `{"role":"assistant","content":[],"usage":{"input":10,"output":40,"cacheRead":900,"cacheWrite":0,"totalTokens":950},"stopReason":"stop"}`),
		msgLine("u2", "a1", `{"role":"user","content":"next"}`),
		msgLine("a2", "u2", `{"role":"assistant","content":[],"usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0},"stopReason":"error"}`),
		msgLine("a3", "a2", `{"role":"assistant","content":[],"usage":{"input":10,"output":20,"cacheRead":0,"cacheWrite":700,"totalTokens":730},"stopReason":"stop"}`))
	rp, err := tr.Replay(Options{Window: 1000, Reserve: 100})
	if err != nil {
		t.Fatal(err)
	}
	want := Policy{Pruned: 2, Switches: 1, Rebilled: 710}
	if rp.Stateless != want || rp.Sticky != want {
		t.Errorf("stateless %+v, sticky %+v; want %+v", rp.Stateless, rp.Sticky, want)
	}

	// Fixture 03: the switch is at the overflow error, and the retry after
	// the compaction carries the reset, so the debt ends unbilled
	// (docs/engage.md says so).
	rp, err = readFixture(t, "03-overflow-recovery.jsonl").Replay(DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	want = Policy{Pruned: 1, Switches: 1, Rebilled: 0}
	if rp.Stateless != want || rp.Sticky != want {
		t.Errorf("fixture 03: stateless %+v, sticky %+v; want %+v", rp.Stateless, rp.Sticky, want)
	}
}

// The rule behind Policy.Rebilled, request by request: a request that
// records a prompt re-bills it when the last request that recorded one went
// out in the other shape, with no reset on either or between them.
func TestRebilledFollowsTheCache(t *testing.T) {
	type req struct {
		pruned bool
		prompt int64
		event  Event
	}
	raw := func(p int64) req { return req{false, p, None} }
	pruned := func(p int64) req { return req{true, p, None} }
	for _, c := range []struct {
		name  string
		ratio float64
		reqs  []req
		want  Policy
	}{
		{"a switch with a prompt bills it", 1, []req{{false, 950, Start}, pruned(800), pruned(820)}, Policy{2, 1, 800}},
		{"a switch without one bills the next prompt", 1, []req{{false, 950, Start}, pruned(0), pruned(0), pruned(710)}, Policy{3, 1, 710}},
		{"switched back before any prompt: nothing to bill", 1, []req{{false, 950, Start}, pruned(0), raw(0), raw(800)}, Policy{1, 2, 0}},
		{"three switches before a prompt: billed once", 1, []req{{false, 950, Start}, pruned(0), raw(0), pruned(800), pruned(820)}, Policy{3, 3, 800}},
		{"a reset with a prompt ends the debt", 1, []req{{false, 950, Start}, pruned(0), {false, 600, Compaction}, raw(700)}, Policy{1, 1, 0}},
		{"a reset without one ends it too", 1, []req{{false, 950, Start}, pruned(0), {false, 0, Compaction}, pruned(700)}, Policy{2, 2, 0}},
		{"the first request is a reset", 1, []req{{true, 950, Start}, pruned(900)}, Policy{2, 0, 0}},
		{"a modelled pruned prompt", 0.5, []req{{false, 1000, Start}, pruned(0), pruned(800)}, Policy{2, 1, 400}},
		{"a modelled raw prompt", 0.5, []req{{true, 1000, Start}, raw(0), raw(800)}, Policy{1, 1, 800}},
	} {
		var p Policy
		var cache cached
		prev := false
		for i, q := range c.reqs {
			if i == 0 {
				prev = q.pruned
			}
			p.count(Row{Request: Request{Event: q.event, Prompt: q.prompt}}, q.pruned, prev, c.ratio, &cache)
			prev = q.pruned
		}
		if p != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, p, c.want)
		}
	}
}

// Re-billed tokens are a sum of recorded prompts, which a hand-made
// transcript can make as large as it likes: the sum saturates at the
// largest int64, never wraps to a negative count (or a negative cost).
// Window 1000, reserve 100: usage 1000 and 10 alternate, so the stateless
// check switches on requests 2, 3 and 4, each recording a 4e18 prompt.
func TestRebilledSaturates(t *testing.T) {
	a := func(usage int) string {
		return fmt.Sprintf(`{"role":"assistant","content":[],"usage":{"input":4e18,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":%d},"stopReason":"stop"}`, usage)
	}
	tr := read(t, v3,
		msgLine("u1", "", `{"role":"user","content":"go"}`),
		msgLine("a1", "u1", a(1000)),
		msgLine("a2", "a1", a(10)),
		msgLine("a3", "a2", a(1000)),
		msgLine("a4", "a3", a(10)))
	rp, err := tr.Replay(Options{Window: 1000, Reserve: 100})
	if err != nil {
		t.Fatal(err)
	}
	if rp.Stateless.Switches != 3 || rp.Stateless.Rebilled != math.MaxInt64 {
		t.Errorf("stateless %+v: want 3 switches and %d re-billed (the sum saturated)", rp.Stateless, int64(math.MaxInt64))
	}
	if rp.Sticky.Switches != 1 || rp.Sticky.Rebilled != 4e18 {
		t.Errorf("sticky %+v: want 1 switch re-billing 4e18", rp.Sticky)
	}
}

// An answer's prompt (input + cacheRead + cacheWrite) past int64 is clamped,
// as its usage is, never wrapped below zero into "records no prompt".
func TestPromptPastInt64IsClamped(t *testing.T) {
	tr := read(t, v3,
		msgLine("u1", "", `{"role":"user","content":"go"}`),
		msgLine("a1", "u1", `{"role":"assistant","content":[],"usage":{"input":4e18,"output":0,"cacheRead":4e18,"cacheWrite":4e18,"totalTokens":0},"stopReason":"stop"}`),
		msgLine("a2", "a1", `{"role":"assistant","content":[],"usage":{"input":-4e18,"output":0,"cacheRead":-4e18,"cacheWrite":-4e18,"totalTokens":0},"stopReason":"stop"}`))
	var got []int64
	for _, q := range tr.Requests() {
		if q.Prompt != 0 {
			got = append(got, q.Prompt)
		}
	}
	if want := []int64{1 << 62, -(1 << 62)}; !slices.Equal(got, want) {
		t.Errorf("prompts %v, want %v", got, want)
	}
}

// The provider keeps one prompt cache per model, so the first request on
// another model writes its whole prompt to the cache whatever the policy:
// a switch there is not the policy's miss, as at a compaction. Window
// 1000, reserve 100 (threshold 900): request 1 (model a) reports 890, the
// 80-character user message after the model change adds 20, so request 2,
// the first on model b, crosses and goes out pruned under both policies; it
// records cacheRead 0, its prompt all written. The model change is not a
// reset for the engagement itself: request 3 (estimate 850, below the
// threshold) stays pruned under the sticky rule.
func TestReplayModelChangeIsNotThePolicysMiss(t *testing.T) {
	a := func(model string, usage, write int) string {
		return fmt.Sprintf(`{"role":"assistant","content":[],"provider":"p","model":%q,"usage":{"input":0,"output":10,"cacheRead":0,"cacheWrite":%d,"totalTokens":%d},"stopReason":"stop"}`, model, write, usage)
	}
	tr := read(t, v3,
		msgLine("u1", "", `{"role":"user","content":"go"}`),
		msgLine("a1", "u1", a("a", 890, 880)),
		`{"type":"model_change","id":"m","parentId":"a1","provider":"p","modelId":"b"}`,
		msgLine("u2", "m", `{"role":"user","content":"`+strings.Repeat("x", 80)+`"}`),
		msgLine("a2", "u2", a("b", 850, 840)),
		msgLine("a3", "a2", a("b", 860, 850)))
	rp, err := tr.Replay(Options{Window: 1000, Reserve: 100})
	if err != nil {
		t.Fatal(err)
	}
	var pruned []bool
	for _, r := range rp.Rows {
		pruned = append(pruned, r.Sticky)
	}
	if !slices.Equal(pruned, []bool{false, true, true}) {
		t.Errorf("sticky %v, want raw, pruned, pruned: a model change does not disengage", pruned)
	}
	// Stateless: pruned at 2 (no switch: the model's first request), raw
	// at 3 (a switch, re-billing its 850).
	if want := (Policy{Pruned: 1, Switches: 1, Rebilled: 850}); rp.Stateless != want {
		t.Errorf("stateless %+v, want %+v", rp.Stateless, want)
	}
	if want := (Policy{Pruned: 2, Switches: 0, Rebilled: 0}); rp.Sticky != want {
		t.Errorf("sticky %+v, want %+v", rp.Sticky, want)
	}
	// The table, the JSON and the chart say why request 2's switch is not
	// counted.
	var table, js, chart bytes.Buffer
	if err := rp.WriteTable(&table, nil); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^ +2  a2 .* model +PRUNED +PRUNED$`).Match(table.Bytes()) {
		t.Errorf("the table's reset column should say model on request 2:\n%s", table.Bytes())
	}
	if err := rp.WriteJSON(&js, nil); err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.SplitN(js.String(), "\n", 4)[:3] {
		if want := fmt.Sprintf(`"model_change":%v`, i == 1); !strings.Contains(line, want) {
			t.Errorf("JSON row %d lacks %s: %s", i+1, want, line)
		}
	}
	if err := rp.WriteSVG(&chart, "t", nil); err != nil {
		t.Fatal(err)
	}
	checkChart(t, chart.Bytes(), rp, nil)
}

// A prompt of one token is a prompt: the provider cached it, so a switch
// on it is billed there (one token), not at the next request's prompt.
func TestAOneTokenPromptIsCached(t *testing.T) {
	var p Policy
	var cache cached
	p.count(Row{Request: Request{Event: Start, Prompt: 950}}, false, false, 1, &cache)
	p.count(Row{Request: Request{Prompt: 1}}, true, false, 1, &cache)
	p.count(Row{Request: Request{Prompt: 800}}, true, true, 1, &cache)
	if want := (Policy{Pruned: 2, Switches: 1, Rebilled: 1}); p != want {
		t.Fatalf("a switch on a one-token prompt: %+v, want %+v", p, want)
	}
}
