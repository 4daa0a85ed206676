package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"sessdb/internal/sharedtest"
)

func engageRun(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(append([]string{"engage"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

// engageFixture returns a file of ../shared/testdata/pi-fixtures, or skips:
// the fixtures sit beside the repository and are never copied into it.
func engageFixture(t *testing.T, name string) string {
	t.Helper()
	p := sharedFixture(name)
	if p == "" {
		t.Skipf("shared fixture %s is absent (it sits beside the repository)", name)
	}
	return p
}

// sharedFixture is the path of a file of ../shared/testdata/pi-fixtures,
// or "" when it is absent.
func sharedFixture(name string) string {
	dir := sharedtest.Locate("pi-fixtures")
	if dir == "" {
		return ""
	}
	p := filepath.Join(dir, name)
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

// engageFixturePath is the fixture the engage goldens replay, or "".
func engageFixturePath() string { return sharedFixture("10-sticky-engagement.jsonl") }

// Fixture 10 through the CLI: EXPECTED.md's table, request for request.
func TestEngageReplayJSON(t *testing.T) {
	code, out, errs := engageRun("replay", "--json", engageFixture(t, "10-sticky-engagement.jsonl"))
	if code != exitOK || errs != "" {
		t.Fatalf("exit %d: %s", code, errs)
	}
	type row struct {
		Request           int
		Entry             string
		Estimate          *int64
		Reset             bool
		Stateless, Sticky bool
	}
	want := []string{
		"1 7b89296c 18 true false false",
		"2 03cc0f27 172502 false false false",
		"3 766bad07 172412 false false false",
		"4 7dc59a3a 183732 false true true",
		"5 470b9805 131734 false false true",
		"6 cf84b683 131776 false false true",
		"7 08ceac39 131900 false false true",
		"8 53e8eb43 null true false false",
		"9 3fffc830 9933 false false false",
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	for i := 0; sc.Scan(); i++ {
		if i == len(want) {
			var line struct{ Summary map[string]any } // every stream ends {"summary": {...}} (issue 12)
			err := json.Unmarshal(sc.Bytes(), &line)
			sum := line.Summary
			if err != nil || sum["requests"] != float64(9) || sum["threshold"] != float64(183616) || sum["pruned_ratio"] != float64(1) || sum["modelled"] != false {
				t.Errorf("summary %s: %v", sc.Text(), err)
			}
			continue
		}
		var r row
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("line %d %q: %v", i+1, sc.Text(), err)
		}
		est := "null"
		if r.Estimate != nil {
			est = strconv.FormatInt(*r.Estimate, 10)
		}
		got := fmt.Sprint(r.Request, " ", r.Entry, " ", est, " ", r.Reset, " ", r.Stateless, " ", r.Sticky)
		if got != want[i] {
			t.Errorf("request %d: %s, want %s", i+1, got, want[i])
		}
	}
}

func TestEngageReplayTable(t *testing.T) {
	path := engageFixture(t, "10-sticky-engagement.jsonl")
	code, out, errs := engageRun("replay", "--window", "200000", "--reserve", "16384", "--cache-read-price", "0.30", "--cache-write-price", "3.75", path)
	if code != exitOK || errs != "" {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, s := range []string{"threshold 183616", "    4  7dc59a3a       11    183732  -           PRUNED     PRUNED", "    5  470b9805       13    131734  -           raw        PRUNED", "extra cost, USD", "no figure below is modelled"} {
		if !strings.Contains(out, s) {
			t.Errorf("table lacks %q:\n%s", s, out)
		}
	}
	code, out, _ = engageRun("replay", "--pruned-ratio", "0.7", path)
	if code != exitOK || !strings.Contains(out, "MODELLED: pruned ratio 0.7") {
		t.Errorf("modelled replay: exit %d\n%s", code, out)
	}
}

// Usage errors exit 2 and name what is wrong; nothing goes to stdout.
func TestEngageUsageErrors(t *testing.T) {
	path := engageFixture(t, "10-sticky-engagement.jsonl")
	cases := []struct {
		args []string
		says string
	}{
		{nil, "want the subcommand replay"},
		{[]string{"rewind", path}, "want the subcommand replay"},
		{[]string{"replay"}, "want exactly one FILE"},
		{[]string{"replay", path, path}, "want exactly one FILE"},
		{[]string{"replay", path, "--json", path}, "want exactly one FILE"},
		{[]string{"replay", "--window", "3.5", path}, `invalid value "3.5" for flag --window`},
		{[]string{"replay", "--window", "1e3", path}, `invalid value "1e3" for flag --window`},
		{[]string{"replay", "--window", "08", path}, `invalid value "08" for flag --window`},
		{[]string{"replay", "--window", "+3", path}, `invalid value "+3" for flag --window`},
		{[]string{"replay", "--window", "-3", path}, `invalid value "-3" for flag --window`},
		{[]string{"replay", "--window", "", path}, `invalid value "" for flag --window`},
		{[]string{"replay", "--window", "99999999999999999999", path}, `invalid value "99999999999999999999" for flag --window`},
		{[]string{"replay", "--window", "0", path}, "--window"},
		// Readings are clamped at 2^62: a window past it could not be
		// compared with a usage pi reads as 1e300 (which pi sees cross).
		{[]string{"replay", "--window", "4611686018427387904", path}, `invalid value "4611686018427387904" for flag --window: is out of range (at most 4611686018427387903)`},
		{[]string{"replay", "--window", "9223372036854775807", "--reserve", "0", path}, `invalid value "9223372036854775807" for flag --window`},
		{[]string{"replay", "--reserve", "3.5", path}, `invalid value "3.5" for flag --reserve`},
		{[]string{"replay", "--window", "1000", "--reserve", "1000", path}, "--reserve 1000: must be below --window 1000"},
		{[]string{"replay", "--pruned-ratio", "0", path}, `invalid value "0" for flag --pruned-ratio`},
		{[]string{"replay", "--pruned-ratio", "1.5", path}, `invalid value "1.5" for flag --pruned-ratio`},
		{[]string{"replay", "--pruned-ratio", ".5", path}, `invalid value ".5" for flag --pruned-ratio`},
		{[]string{"replay", "--pruned-ratio", "1e-1", path}, `invalid value "1e-1" for flag --pruned-ratio`},
		{[]string{"replay", "--cache-read-price", "0.3", path}, "go together"},
		{[]string{"replay", "--cache-write-price", "3.75", path}, "go together"},
		{[]string{"replay", "--cache-read-price", "-1", "--cache-write-price", "3", path}, `invalid value "-1" for flag --cache-read-price`},
		// A price far past any model's made the extra cost +Inf (found by
		// an audit: "+Inf" in the table, a torn JSON stream); one past
		// what a float holds was quoted twice.
		{[]string{"replay", "--cache-read-price", "0", "--cache-write-price", "1" + strings.Repeat("0", 308), path}, "want at most 1000000"},
		{[]string{"replay", "--cache-read-price", "0", "--cache-write-price", "1000000.5", path}, "want at most 1000000"},
		{[]string{"replay", "--cache-read-price", "0", "--cache-write-price", strings.Repeat("9", 400), path}, "want at most 1000000"},
		// A write price below the read price made the extra cost negative.
		{[]string{"replay", "--cache-read-price", "5", "--cache-write-price", "1", path}, "below --cache-read-price"},
		{[]string{"replay", "--bogus", path}, "-bogus"},
		{[]string{"replay", "--svg", "", path}, "--svg: want a file name"},
		{[]string{"replay", "--svg"}, "flag needs an argument: --svg"},
		{[]string{"replay", path, "--svg", "c.svg", "--", "--json"}, "want exactly one FILE"},
	}
	for _, c := range cases {
		code, out, errs := engageRun(c.args...)
		if code != exitUsage || out != "" || !strings.Contains(errs, c.says) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 naming %q", c.args, code, out, errs, c.says)
		}
		if long := strings.Repeat("9", 100); strings.Count(errs, long) > 1 {
			t.Errorf("%q: the value is quoted twice: %q", c.args, errs)
		}
	}
	if code, _, _ := engageRun("replay", "-h"); code != exitOK {
		t.Errorf("-h: exit %d", code)
	}
}

// A file that is not a pi transcript is a fault: exit 1, one line on stderr
// that says which, nothing on stdout.
func TestEngageNotATranscript(t *testing.T) {
	cases := map[string]string{
		"04a-bad-header-missing.jsonl":       `first entry is a "message" entry, not a session header`,
		"04b-bad-header-id-not-string.jsonl": "session header id is not a string",
		"04c-bad-header-unparseable.jsonl":   "is not JSON",
		"04d-empty.jsonl":                    "empty",
	}
	for name, says := range cases {
		code, out, errs := engageRun("replay", engageFixture(t, name))
		if code != exitFault || out != "" || !strings.Contains(errs, says) || !strings.Contains(errs, "not a pi transcript") || strings.Count(errs, "\n") != 1 {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", name, code, out, errs)
		}
	}
	code, _, errs := engageRun("replay", filepath.Join(t.TempDir(), "missing.jsonl"))
	if code != exitFault || !strings.Contains(errs, "no such file") {
		t.Errorf("missing file: exit %d, %q", code, errs)
	}
}

// --svg writes the chart beside the normal output, which it leaves as it
// was; the file replaces what was there, whole, and leaves no temp behind.
func TestEngageReplaySVG(t *testing.T) {
	path := engageFixture(t, "10-sticky-engagement.jsonl")
	dir := t.TempDir()
	chart := filepath.Join(dir, "chart.svg")
	if err := os.WriteFile(chart, []byte("an older chart"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, mode := range [][]string{nil, {"--json"}} {
		_, plain, _ := engageRun(append(append([]string{"replay"}, mode...), path)...)
		code, out, errs := engageRun(append(append([]string{"replay", "--svg", chart}, mode...), path)...)
		if code != exitOK || errs != "" || out != plain {
			t.Fatalf("%v: exit %d, stderr %q; stdout the same as without --svg: %v", mode, code, errs, out == plain)
		}
		b, err := os.ReadFile(chart)
		if err != nil {
			t.Fatal(err)
		}
		var svg struct {
			XMLName xml.Name
			Title   string `xml:"title"`
		}
		if err := xml.Unmarshal(b, &svg); err != nil || svg.XMLName.Local != "svg" || svg.Title != "sessdb engage replay "+path {
			t.Errorf("%v: chart root %v, title %q: %v", mode, svg.XMLName, svg.Title, err)
		}
		mask := syscall.Umask(0)
		syscall.Umask(mask)
		if st, err := os.Stat(chart); err != nil || st.Mode().Perm() != os.FileMode(0o666&^mask) {
			t.Errorf("chart mode %v: %v", st.Mode(), err)
		}
	}
	if names, _ := os.ReadDir(dir); len(names) != 1 {
		t.Errorf("the directory holds %v, want only chart.svg", names)
	}
}

// A chart that cannot be written is a fault (exit 1, nothing on stdout,
// whatever was at the path untouched); a symbolic link at the path is
// refused, never written through nor replaced.
func TestEngageReplaySVGRefused(t *testing.T) {
	path := engageFixture(t, "10-sticky-engagement.jsonl")
	dir := t.TempDir()
	target := filepath.Join(dir, "target.svg")
	if err := os.WriteFile(target, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.svg")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	dangling := filepath.Join(dir, "dangling.svg")
	if err := os.Symlink(filepath.Join(dir, "nowhere.svg"), dangling); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ at, says string }{
		{link, "symbolic link"},
		{dangling, "symbolic link"},
		{sub, "not a regular file"},
		{filepath.Join(dir, "missing", "chart.svg"), "no such file"},
	}
	for _, c := range cases {
		code, out, errs := engageRun("replay", "--svg", c.at, path)
		if code != exitFault || out != "" || !strings.Contains(errs, "write chart "+c.at) || !strings.Contains(errs, c.says) {
			t.Errorf("--svg %s: exit %d, stdout %q, stderr %q; want exit 1 naming %q", c.at, code, out, errs, c.says)
		}
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "keep me" {
		t.Errorf("the link's target now holds %q (%v)", b, err)
	}
	for _, l := range []string{link, dangling} {
		if st, err := os.Lstat(l); err != nil || st.Mode()&os.ModeSymlink == 0 {
			t.Errorf("%s is no longer a link: %v", l, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "nowhere.svg")); !os.IsNotExist(err) {
		t.Errorf("the dangling link's target was created: %v", err)
	}
	if names, _ := os.ReadDir(dir); len(names) != 4 {
		t.Errorf("the directory holds %v: a temp file was left behind?", names)
	}
}

// engage replay on a FIFO or a device is a bad input like any file that
// is not a transcript: exit 1 and one line, at once (it blocked forever on
// a FIFO).
func TestEngageReplayRefusesWhatIsNotARegularFile(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{fifo, os.DevNull} {
		done := make(chan struct{})
		var code int
		var out, errs string
		go func() {
			defer close(done)
			code, out, errs = engageRun("replay", path)
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("engage replay %s blocked", path)
		}
		if code != exitFault || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "not a regular file") {
			t.Errorf("engage replay %s: exit %d, stdout %q, stderr %q; want exit 1 and one line", path, code, out, errs)
		}
	}
}

// --svg naming the transcript itself (or a link to it as FILE) is refused:
// the chart replaced the session it was drawn from.
func TestEngageReplaySVGIsNotTheTranscript(t *testing.T) {
	src, err := os.ReadFile(engageFixture(t, "10-sticky-engagement.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "session.jsonl")
	if err := os.WriteFile(path, src, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.jsonl")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ file, chart string }{
		{path, path},
		{path, filepath.Join(dir, ".", "session.jsonl")},
		{link, path},
	} {
		code, out, errs := engageRun("replay", "--svg", c.chart, c.file)
		if code != exitFault || out != "" || !strings.Contains(errs, "write chart "+c.chart) || !strings.Contains(errs, "the transcript") {
			t.Errorf("--svg %s %s: exit %d, stdout %q, stderr %q; want exit 1 naming the transcript", c.chart, c.file, code, out, errs)
		}
		if b, err := os.ReadFile(path); err != nil || !bytes.Equal(b, src) {
			t.Fatalf("--svg %s %s: the transcript now starts %.40q (%v)", c.chart, c.file, b, err)
		}
	}
	if names, _ := os.ReadDir(dir); len(names) != 2 {
		t.Errorf("the directory holds %v: a temp file was left behind?", names)
	}
}

// The chart is created as any file the user asks for: 0666 less the
// umask. Under umask 077 it is private (it was 0644, readable by everyone,
// whatever the umask).
func TestEngageReplaySVGHonoursTheUmask(t *testing.T) {
	path := engageFixture(t, "10-sticky-engagement.jsonl")
	chart := filepath.Join(t.TempDir(), "chart.svg")
	for _, mask := range []int{0o077, 0o022, 0o002} {
		old := syscall.Umask(mask)
		code, _, errs := engageRun("replay", "--svg", chart, path)
		syscall.Umask(old)
		if code != exitOK {
			t.Fatalf("umask %03o: exit %d: %s", mask, code, errs)
		}
		if st, err := os.Stat(chart); err != nil || st.Mode().Perm() != os.FileMode(0o666&^mask) {
			t.Errorf("umask %03o: chart mode %v (%v), want %v", mask, st.Mode().Perm(), err, os.FileMode(0o666&^mask))
		}
	}
}

// A chart whose name is as long as a file name may be is written: the temp
// file beside it was named after it, with 20 bytes more, and went past
// the limit (ENAMETOOLONG, exit 1).
func TestEngageReplaySVGLongName(t *testing.T) {
	path := engageFixture(t, "10-sticky-engagement.jsonl")
	dir := t.TempDir()
	chart := filepath.Join(dir, strings.Repeat("c", 251)+".svg")
	code, _, errs := engageRun("replay", "--svg", chart, path)
	if code != exitOK || errs != "" {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if b, err := os.ReadFile(chart); err != nil || !bytes.HasPrefix(b, []byte("<svg ")) {
		t.Errorf("the chart holds %.20q (%v)", b, err)
	}
	if names, _ := os.ReadDir(dir); len(names) != 1 {
		t.Errorf("the directory holds %v: a temp file was left behind?", names)
	}
}

// chartSignalEnv makes the re-executed test binary (cliChildEnv) send
// itself the signal it names, by number, once engage replay has written
// the chart's temp file and before the rename.
const chartSignalEnv = "SESSDB_TEST_CHART_SIGNAL"

func signalSelf(s string) func() {
	return func() {
		n, _ := strconv.Atoi(s)
		syscall.Kill(os.Getpid(), syscall.Signal(n))
		if signal.Ignored(syscall.Signal(n)) {
			return // the kernel discarded it
		}
		time.Sleep(2 * time.Second) // the signal ends the process long before
	}
}

// childIgnoresHUP reports whether a child started now begins with SIGHUP
// ignored: a shell that sends itself one survives it only then.
func childIgnoresHUP(t *testing.T) bool {
	t.Helper()
	out, err := exec.Command("/bin/sh", "-c", "kill -HUP $$; echo alive").Output()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return strings.Contains(string(out), "alive")
}

// A signal while the chart is being written (Ctrl-C, SIGTERM, a closed
// terminal) still kills engage replay at once, as docs/cli.md says, but
// leaves no .sessdb-chart.tmp-* beside the chart: the temp file is
// removed first, then the process dies of the signal.
func TestEngageReplaySVGSignalLeavesNoTemp(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "s.jsonl")
	transcript := `{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}
{"type":"message","id":"u1","parentId":null,"message":{"role":"user","content":"go"}}
{"type":"message","id":"a1","parentId":"u1","message":{"role":"assistant","content":[],"usage":{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3},"stopReason":"stop"}}
`
	if err := os.WriteFile(file, []byte(transcript), 0o600); err != nil {
		t.Fatal(err)
	}
	// The test leaves this process's signals as it found them: Go cannot
	// undo a signal.Ignore (the kernel's disposition stays SIG_IGN after
	// signal.Reset), and every later test's children would inherit it.
	hupIgnored := childIgnoresHUP(t)
	defer func() {
		if childIgnoresHUP(t) != hupIgnored {
			t.Errorf("a child started after the test ignores SIGHUP: %v, before it: %v", !hupIgnored, hupIgnored)
		}
	}()
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP} {
		cmd := exec.Command(os.Args[0], "engage", "replay", "--svg", filepath.Join(dir, "c.svg"), file)
		cmd.Env = append(os.Environ(), cliChildEnv+"=1", chartSignalEnv+"="+strconv.Itoa(int(sig)))
		// The child inherits an ignored signal, and engage replay rightly
		// leaves it ignored (the case below): under nohup (SIGHUP) or as a
		// background job of a shell without job control (SIGINT) the child
		// finished as if never signalled. A signal caught here is one the
		// exec resets to its default, whatever the test was started with.
		caught := make(chan os.Signal, 1)
		signal.Notify(caught, sig)
		out, err := cmd.Output()
		signal.Stop(caught)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || !ee.Sys().(syscall.WaitStatus).Signaled() || ee.Sys().(syscall.WaitStatus).Signal() != sig {
			t.Errorf("%v: %v, stdout %q; want killed by the signal", sig, err, out)
		}
		if names, _ := os.ReadDir(dir); len(names) != 1 {
			var got []string
			for _, n := range names {
				got = append(got, n.Name())
			}
			t.Errorf("%v: the directory holds %q; want only the transcript", sig, got)
		}
	}
	// A signal the process was started ignoring stays ignored: the chart is
	// written, and no temp is left. A shell ignores SIGHUP for the child,
	// as nohup does, and exec keeps it ignored; ignoring it here instead
	// could not be undone.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a child stuck waiting for its own signal fails here, not at the suite's timeout
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", `trap '' HUP; exec "$0" "$@"`, os.Args[0], "engage", "replay", "--svg", filepath.Join(dir, "c.svg"), file)
	cmd.Env = append(os.Environ(), cliChildEnv+"=1", chartSignalEnv+"="+strconv.Itoa(int(syscall.SIGHUP)))
	err := cmd.Run()
	var names []string
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if err != nil || !slices.Equal(names, []string{"c.svg", "s.jsonl"}) {
		t.Errorf("hangup ignored: %v, the directory holds %q; want the chart written and no temp", err, names)
	}
}

// The ratio and the prices the table, the chart and a usage error repeat
// are written as the flags take them, digits with at most one point:
// strconv's shortest form printed a write price of 1000000 as "1e+06" and
// a ratio of 0.00001 as "1e-05", a notation the same flags refuse.
func TestEngageReplayRepeatsItsFlagsInTheirOwnNotation(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "t.jsonl")
	if err := os.WriteFile(file, []byte(`{"type":"session","version":3,"id":"s","timestamp":"2026-11-01T00:00:00.000Z","cwd":"/w"}`+"\n"+
		`{"type":"message","id":"u1","parentId":null,"timestamp":"t","message":{"role":"user","content":"hi"}}`+"\n"+
		`{"type":"message","id":"a1","parentId":"u1","timestamp":"t","message":{"role":"assistant","content":[],"usage":{"input":5,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":6},"stopReason":"stop"}}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	chart := filepath.Join(dir, "c.svg")
	code, out, errs := engageRun("replay", "--pruned-ratio", "0.00001", "--cache-read-price", "0.00001", "--cache-write-price", "1000000", "--svg", chart, file)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	svg, err := os.ReadFile(chart)
	if err != nil {
		t.Fatal(err)
	}
	exp := regexp.MustCompile(`\de[-+]\d`) // strconv's exponent always has a sign
	for name, text := range map[string]string{"table": out, "chart": string(svg)} {
		for _, want := range []string{"pruned ratio 0.00001", "cache read 0.00001, cache write 1000000 USD per million tokens"} {
			if !strings.Contains(text, want) {
				t.Errorf("%s: no %q", name, want)
			}
		}
		if m := exp.FindString(text); m != "" {
			t.Errorf("%s: a number in exponent notation, %q, which the flags refuse", name, m)
		}
	}
	code, _, errs = engageRun("replay", "--cache-read-price", "1000000", "--cache-write-price", "0.00001", file)
	if want := "--cache-write-price 0.00001 is below --cache-read-price 1000000"; code != exitUsage || !strings.Contains(errs, want) {
		t.Errorf("exit %d, %q; want exit 2 saying %q", code, errs, want)
	}
}
