package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"sessdb/store"
)

// An operator who alerts as stats.md says hears of a run sessdb could not
// read as pi does (a parentId cycle here, promoted and refused), and not
// of an operator's accept, which records no run. Its "runs not answered"
// rule counted errored and unanswered runs only: a key that came to hold
// a transcript pi loops on raised no alert. The alert's selector is read
// from stats.md and matched against stats --prometheus; stats --json
// counts the same runs.
func TestStatsAlertsOnARunSessdbCannotRead(t *testing.T) {
	clearEnv(t)
	root := filepath.Join(t.TempDir(), "sessions")
	resolve := func(key string) string {
		t.Helper()
		job := filepath.Join(t.TempDir(), "job")
		if code, _, errs := runCLI(t, "resolve", "--sessions-dir", root, "--key", key, "--job-dir", job, "--pi-version", "0.58.3"); code != exitOK {
			t.Fatalf("resolve: %s", errs)
		}
		return job
	}
	promote := func(job string, extra ...string) string {
		t.Helper()
		code, out, errs := runCLI(t, append([]string{"promote", "--sessions-dir", root, "--job-dir", job, "--pi-version", "0.58.3"}, extra...)...)
		if code != exitOK {
			t.Fatalf("promote: exit %d %s%s", code, out, errs)
		}
		return out
	}

	// A conversation, then a run that left a cycle in it: the answer is
	// the prompt's parent, and the prompt the answer's. (A refusal of a
	// key's first promotion has no record to go in.)
	looped := strings.Repeat("d1", 16)
	job := resolve(looped)
	appendAnswered(t, job, "first")
	promote(job)
	job = resolve(looped)
	staged := filepath.Join(job, store.StagedDirName, store.TranscriptName)
	given, err := os.ReadFile(staged)
	if err != nil {
		t.Fatal(err)
	}
	loop := `{"type":"message","id":"u-c","parentId":"a-c","timestamp":"2026-11-29T10:00:03.000Z","message":{"role":"user","content":"q"}}` + "\n" +
		`{"type":"message","id":"a-c","parentId":"u-c","timestamp":"2026-11-29T10:00:04.000Z","message":{"role":"assistant","content":[{"type":"text","text":"ok"}],"provider":"anthropic","model":"claude-sonnet-4-5","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2},"stopReason":"stop"}}` + "\n"
	if err := os.WriteFile(staged, append(given, loop...), 0o600); err != nil {
		t.Fatal(err)
	}
	if out := promote(job, "--require", "answered"); !strings.Contains(out, `"reason":"run-incomplete"`) || !strings.Contains(out, `"run":"unknown"`) {
		t.Fatalf("--require answered: %s; want run-incomplete, run unknown", out)
	}
	if out := promote(job); !strings.Contains(out, `"promoted":true`) || !strings.Contains(out, `"run":"unknown"`) {
		t.Fatalf("promote: %s; want promoted, run unknown", out)
	}

	// An answered run, its transcript then replaced by hand and accepted
	// by the operator: the accept's entry records no run.
	accepted := strings.Repeat("a2", 16)
	job = resolve(accepted)
	appendAnswered(t, job, "fine")
	if out := promote(job); !strings.Contains(out, `"run":"answered"`) {
		t.Fatalf("promote: %s; want run answered", out)
	}
	if err := os.WriteFile(filepath.Join(root, accepted, store.TranscriptName), []byte(header), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := runCLI(t, "check", "--repair", "--accept", accepted, root); code != exitOK || !strings.Contains(out, "accepted") {
		t.Fatalf("check --repair --accept: exit %d\n%s%s", code, out, errs)
	}

	s := statsOf(t, "--since", "1h", root)
	for _, r := range s.Promotions.Runs {
		want := runCount{Run: r.Run}
		switch r.Run {
		case "unknown":
			want.Promotions, want.Refusals = 1, 1
		case "answered":
			want.Promotions = 2
		}
		if r != want {
			t.Errorf("stats --json: runs %+v, want %+v", r, want)
		}
	}
	if s.Promotions.Accepted != 1 {
		t.Errorf("stats --json: accepted %d, want 1", s.Promotions.Accepted)
	}

	// The alert, as stats.md writes it.
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "stats.md"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| runs sessdb cannot read \\| `sum\\(sessdb_promotions_by_run\\{([^}]*)\\}\\) > 0` \\|").FindSubmatch(doc)
	if row == nil {
		t.Fatal(`stats.md has no alert "runs sessdb cannot read" of the form sum(sessdb_promotions_by_run{...}) > 0`)
	}
	matchers := regexp.MustCompile(`(\w+)(=~|!~|!=|=)"([^"]*)"`).FindAllStringSubmatch(strings.ReplaceAll(string(row[1]), `\|`, "|"), -1)
	code, out, errs := runCLI(t, "stats", "--prometheus", "--since", "1h", root)
	if code != exitOK {
		t.Fatalf("stats --prometheus: exit %d\n%s", code, errs)
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, m := range fams["sessdb_promotions_by_run"].GetMetric() {
		labels := map[string]string{}
		for _, lp := range m.GetLabel() {
			labels[lp.GetName()] = lp.GetValue()
		}
		if promMatch(t, labels, matchers) {
			sum += m.GetGauge().GetValue()
		}
	}
	if sum != 2 {
		t.Errorf("stats.md's alert %q sums %v over stats --prometheus, want 2 (the cycle's promotion and its refusal; not the accept)", row[1], sum)
	}
}

// promMatch reports whether labels meet every matcher (name, op, value),
// PromQL's: a regular expression is anchored at both ends.
func promMatch(t *testing.T, labels map[string]string, matchers [][]string) bool {
	t.Helper()
	for _, m := range matchers {
		name, op, value := m[1], m[2], m[3]
		got := labels[name]
		var ok bool
		switch op {
		case "=":
			ok = got == value
		case "!=":
			ok = got != value
		case "=~", "!~":
			ok = regexp.MustCompile("^(?:"+value+")$").MatchString(got) == (op == "=~")
		}
		if !ok {
			return false
		}
	}
	return true
}
