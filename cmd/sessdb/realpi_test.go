package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"sessdb/internal/etcdtest"
	"sessdb/internal/sharedtest"
	"sessdb/store"
)

// piHomeEnv names a folder where the real pi 0.58.3 is installed
// (node_modules/.bin/pi), for TestTheRealPiThroughTheCLI.
const piHomeEnv = "SESSDB_PI_HOME"

// TestTheRealPiThroughTheCLI runs the worker's loop of the README with the
// real pi 0.58.3 between sessdb's resolve and promote, pi talking to
// ../shared/tools/pi-mock's stand-in for its model provider, on a sessions
// root and on a fleet (one etcd member): a cold start, a resume whose
// history pi loads, a context the bound refuses and pi then compacts, a
// provider error, a run killed mid-answer, one killed after a tool's
// result, and a switch to a model with another window. Every reading
// sessdb promotes is the one pi's own getContextUsage() gave at the end of
// that run, or for a run killed at its last request (usage-ext.js logs
// both), window and model included; and engage replay estimates every
// request of the conversation as pi read it before that request. It needs
// node and python3, and pi installed where SESSDB_PI_HOME says; unset, it
// skips and says how.
func TestTheRealPiThroughTheCLI(t *testing.T) {
	e := startRealPi(t)
	var rooted *piWorker
	t.Run("sessions root", func(t *testing.T) {
		rooted = e.rootWorker(t, "sessions")
		e.loop(t, rooted)
	})
	t.Run("fleet", func(t *testing.T) {
		e.loop(t, e.fleetWorker(t, etcdtest.Start1(t), "fleet"))
	})
	// The README's move of a single-host root into a fleet and back, in the
	// middle of the conversation (on the model its last run switched to):
	// each side resumes what the other promoted, and its next reading is
	// pi's.
	t.Run("sessions root moved into a fleet and back", func(t *testing.T) {
		if rooted == nil || rooted.key == "" {
			t.Skip("the sessions root's jobs did not run")
		}
		from := rooted.dumped(t)
		fleet := e.fleetWorker(t, etcdtest.Start1(t), "moved")
		var moved map[string]any
		e.sessdb(t, fleet.env, &moved, "migrate", "--to", "etcd", "--json", rooted.dumpArgs[0])
		if r := fleet.resolve(t, "10", nil, small); !r.Resume || r.Key != rooted.key || r.Bytes != from.Record.Bytes {
			t.Fatalf("the fleet's first resolve: %+v; want the root's %d bytes resumed (migrate said %v)", r, from.Record.Bytes, moved)
		}
		run := e.turn(t, fleet, "10", mockControl{Input: 300, Output: 40, CacheRead: 5000}, small)
		if p := fleet.promote(t, "10", "--require", "answered", "--models", filepath.Join(e.agent, "models.json")); !p.Promoted || p.Gen != from.Record.Gen+1 {
			t.Fatalf("the fleet's promotion: %+v; want gen %d", p, from.Record.Gen+1)
		}
		fleet.readingIsPis(t, "a run on the fleet", "10", run, run.End, small)
		onFleet := fleet.dumped(t)
		if onFleet.ResumeChain != from.ResumeChain+1 {
			t.Fatalf("resume chain %d on the fleet after %d on the root", onFleet.ResumeChain, from.ResumeChain)
		}

		back := e.rootWorker(t, "back")
		e.sessdb(t, fleet.env, &moved, "migrate", "--from", "etcd", "--json", back.dumpArgs[0])
		if r := back.resolve(t, "11", nil, small); !r.Resume || r.Bytes != onFleet.Record.Bytes {
			t.Fatalf("the root's resolve after the way back: %+v; want the fleet's %d bytes resumed (migrate said %v)", r, onFleet.Record.Bytes, moved)
		}
		run = e.turn(t, back, "11", mockControl{Input: 100, Output: 60, CacheRead: 5400}, small)
		if p := back.promote(t, "11", "--require", "answered", "--models", filepath.Join(e.agent, "models.json")); !p.Promoted || p.Gen != onFleet.Record.Gen+1 {
			t.Fatalf("the promotion after the way back: %+v; want gen %d", p, onFleet.Record.Gen+1)
		}
		back.readingIsPis(t, "a run after the way back", "11", run, run.End, small)
	})
}

// rootWorker is a worker on a new sessions root named name.
func (e *realPi) rootWorker(t *testing.T, name string) *piWorker {
	t.Helper()
	root := filepath.Join(e.dir, name)
	if err := os.Mkdir(root, 0o700); err != nil {
		t.Fatal(err)
	}
	w := &piWorker{e: e, jobs: filepath.Join(e.dir, name+"-jobs"), env: []string{"PI_SESSIONS_DIR=" + root}, dumpArgs: []string{root}}
	if err := os.Mkdir(w.jobs, 0o700); err != nil {
		t.Fatal(err)
	}
	return w
}

// fleetWorker is a worker on a new fleet named name on c.
func (e *realPi) fleetWorker(t *testing.T, c *etcdtest.Cluster, name string) *piWorker {
	t.Helper()
	transcripts := filepath.Join(e.dir, name+"-transcripts")
	if err := os.Mkdir(transcripts, 0o700); err != nil {
		t.Fatal(err)
	}
	w := &piWorker{e: e, jobs: filepath.Join(e.dir, name+"-jobs"), env: []string{
		"PI_SESSIONS_ETCD_ENDPOINTS=" + strings.Join(c.Endpoints(), ","),
		"PI_SESSIONS_TRANSCRIPTS_DIR=" + transcripts,
		"PI_SESSIONS_ETCD_PREFIX=/sessdb/" + name,
	}}
	if err := os.Mkdir(w.jobs, 0o700); err != nil {
		t.Fatal(err)
	}
	return w
}

// piWorker is one backend's worker: where its jobs' dirs go, the
// environment that names its store, and what dump takes after its flags.
type piWorker struct {
	e        *realPi
	jobs     string
	env      []string
	dumpArgs []string
	key      string // the conversation's, as resolve printed it
	// estimates is pi's reading before each request of every run
	// promoted, by the last entry pi had saved (its leaf).
	estimates map[string]*int
}

const (
	repo   = "acme/widget"
	sonnet = "anthropic/claude-sonnet-4-5"
	small  = "mock/mock-small" // pi-mock's models.json: a 100,000-token window
)

// resolve resolves the conversation for job, with env added to the
// worker's and the job's model.
func (w *piWorker) resolve(t *testing.T, job string, env []string, model string) resolveOutput {
	t.Helper()
	args := []string{"resolve", "--kind", "github", "--repo", repo, "--ref", "pi/issue-42", "--job-dir", filepath.Join(w.jobs, job),
		"--pi-version", "0.58.3", "--venue", "local", "--job", job, "--model", model}
	var r resolveOutput
	w.e.sessdb(t, append(append([]string{}, w.env...), env...), &r, args...)
	w.key = r.Key
	return r
}

// promote promotes job's run, with args.
func (w *piWorker) promote(t *testing.T, job string, args ...string) promoteResult {
	t.Helper()
	var r promoteResult
	w.e.sessdb(t, w.env, &r, append([]string{"promote", "--job-dir", filepath.Join(w.jobs, job), "--pi-version", "0.58.3"}, args...)...)
	return r
}

// readingIsPis holds the reading job's promotion stored to pi's own, live
// at the end of run (or, killed, at its last request) and offline, from
// the transcript the job promoted (pi-end-usage.mjs: what pi reports when
// it loads it again); pi's two must agree first.
func (w *piWorker) readingIsPis(t *testing.T, step, job string, run piRun, live piUsage, model string) {
	t.Helper()
	w.record(t, run)
	offline := w.e.endUsage(t, w, job)
	if tokens(offline.Tokens) != tokens(live.Tokens) || offline.Model != model {
		t.Fatalf("%s: pi's reading at the end of its run is %s tokens (model %s), and of the transcript it left %s (model %s): the case is not what it says", step, tokens(live.Tokens), model, tokens(offline.Tokens), offline.Model)
	}
	k := w.dumped(t)
	if k.Context == nil || live.Tokens == nil || k.Context.Tokens != *live.Tokens || k.Context.Window != live.Window || k.Context.Model != model {
		t.Fatalf("%s: the key's reading is %+v; pi's own: %s of %d tokens, model %s", step, k.Context, tokens(live.Tokens), live.Window, model)
	}
}

// record keeps pi's readings before run's requests.
func (w *piWorker) record(t *testing.T, run piRun) {
	t.Helper()
	if w.estimates == nil {
		w.estimates = map[string]*int{}
	}
	requests := run.requests
	if run.killed {
		requests = requests[:len(requests)-1] // its answer never came
	}
	for _, ev := range requests {
		if was, ok := w.estimates[ev.Leaf]; ok && tokens(was) != tokens(ev.Usage.Tokens) {
			t.Fatalf("pi read the context after entry %s as %s, and later as %s", ev.Leaf, tokens(was), tokens(ev.Usage.Tokens))
		}
		w.estimates[ev.Leaf] = ev.Usage.Tokens
	}
}

// loop runs the jobs of TestTheRealPiThroughTheCLI on w's store.
func (e *realPi) loop(t *testing.T, w *piWorker) {
	t.Helper()

	// A cold start: pi writes its own header into the empty staged file.
	if r := w.resolve(t, "1", nil, sonnet); r.Resume || r.Reason != "absent" || r.Bytes != 0 {
		t.Fatalf("first resolve: %+v", r)
	}
	run := e.turn(t, w, "1", mockControl{Input: 1200, Output: 80}, "")
	if p := w.promote(t, "1", "--require", "answered"); !p.Promoted || p.Gen != 1 || p.Run != "answered" {
		t.Fatalf("cold run: %+v", p)
	}
	w.readingIsPis(t, "cold run", "1", run, run.End, sonnet)

	// A resume: pi loads the history it is given (the first run's two
	// messages before the prompt).
	promoted := w.dumped(t).Record.Bytes
	if r := w.resolve(t, "2", nil, sonnet); !r.Resume || r.Bytes != promoted {
		t.Fatalf("second resolve: %+v; want resumed, the %d bytes promoted", r, promoted)
	}
	run = e.turn(t, w, "2", mockControl{Input: 50, Output: 120, CacheRead: 1250, CacheWrite: 30}, "")
	if run.FirstMessages != 3 {
		t.Fatalf("pi's first request of the resumed run held %d messages; want the history's 2 and the prompt", run.FirstMessages)
	}
	if p := w.promote(t, "2", "--require", "answered"); !p.Promoted || p.Gen != 2 {
		t.Fatalf("resumed run: %+v", p)
	}
	w.readingIsPis(t, "resumed run", "2", run, run.End, sonnet)
	if k := w.dumped(t); k.ResumeChain != 1 {
		t.Fatalf("resume chain %d after one resume", k.ResumeChain)
	}

	// A full context: the bound refuses it; resumed without one, pi
	// compacts at the start of the run (print mode never does at its end),
	// and the reading after is pi's again.
	w.resolve(t, "3", nil, sonnet)
	run = e.turn(t, w, "3", mockControl{Input: 2000, Output: 300, CacheRead: 185000}, "")
	if p := w.promote(t, "3", "--require", "answered"); !p.Promoted {
		t.Fatalf("full run: %+v", p)
	}
	w.readingIsPis(t, "full run", "3", run, run.End, sonnet)
	if r := w.resolve(t, "4-bounded", []string{"PI_SESSION_MAX_CONTEXT_PCT=90"}, sonnet); r.Resume || r.Reason != "context-too-full" || r.Bytes != 0 {
		t.Fatalf("resolve under a 90%% bound of a context pi read at %s of %d: %+v", tokens(run.End.Tokens), run.End.Window, r)
	}
	if st, err := os.Stat(w.staged("4-bounded")); err != nil || st.Size() != 0 {
		t.Fatalf("the refused job's staged file: %v, %v; want empty", st, err)
	}
	if r := w.resolve(t, "4", nil, sonnet); !r.Resume {
		t.Fatalf("resolve with no bound: %+v", r)
	}
	run = e.turn(t, w, "4", mockControl{Input: 3000, Output: 200}, "")
	if !bytes.Contains(e.stagedData(t, w, "4"), []byte(`"type":"compaction"`)) {
		t.Fatal("pi did not compact the full context it resumed: the case is not what it says")
	}
	if p := w.promote(t, "4", "--require", "answered"); !p.Promoted || p.Run != "answered" {
		t.Fatalf("compacted run: %+v", p)
	}
	w.readingIsPis(t, "compacted run", "4", run, run.End, sonnet)

	// A provider error: pi exits 0 in json mode; the run says errored.
	w.resolve(t, "5", nil, sonnet)
	run = e.turn(t, w, "5", mockControl{HTTPStatus: 400, ErrorMessage: "mock refused"}, "")
	if run.Exit != 0 {
		t.Fatalf("pi --mode json exited %d after a provider error; the README says 0", run.Exit)
	}
	if p := w.promote(t, "5", "--require", "answered"); p.Promoted || p.Reason != "run-incomplete" || p.Run != "errored" {
		t.Fatalf("errored run, answered required: %+v", p)
	}
	errored := w.promote(t, "5")
	if !errored.Promoted || errored.Run != "errored" {
		t.Fatalf("errored run promoted: %+v", errored)
	}
	w.readingIsPis(t, "errored run", "5", run, run.End, sonnet)

	// A run killed mid-answer: pi wrote the prompt and no answer.
	gen := errored.Gen
	if g := w.dumped(t).Record.Gen; g != gen {
		t.Fatalf("dump says gen %d; the promote said %d", g, gen)
	}
	w.resolve(t, "6", nil, sonnet)
	e.turnKilled(t, w, "6", mockControl{Input: 100, Output: 20}, 1)
	if p := w.promote(t, "6", "--require", "answered"); p.Promoted || p.Reason != "run-incomplete" || p.Run != "unanswered" {
		t.Fatalf("killed run: %+v", p)
	}
	if g := w.dumped(t).Record.Gen; g != gen {
		t.Fatalf("the refused run moved the key from gen %d to %d", gen, g)
	}

	// A run that called a tool and was killed while the answer after the
	// tool's result streamed: promoted, it is unanswered, and its reading
	// is pi's estimate of that context (the last usage, and the tool's
	// result after it), as pi gave it for its last request.
	w.resolve(t, "6-tool", nil, sonnet)
	run = e.turnKilled(t, w, "6-tool", mockControl{Input: 1500, Output: 70, Tool: &mockTool{Name: "bash", Input: map[string]string{"command": "seq 1 500"}}}, 2)
	if !bytes.Contains(e.stagedData(t, w, "6-tool"), []byte(`"role":"toolResult"`)) {
		t.Fatal("the killed run holds no tool result: the case is not what it says")
	}
	if p := w.promote(t, "6-tool"); !p.Promoted || p.Run != "unanswered" {
		t.Fatalf("killed run after a tool call: %+v", p)
	}
	w.readingIsPis(t, "killed run after a tool call", "6-tool", run, run.LastContext, sonnet)

	// Another model, whose window comes from pi's models.json: the
	// reading is pi's against that window, and the bound judges it only
	// for a job on that model.
	w.resolve(t, "7", nil, small)
	run = e.turn(t, w, "7", mockControl{Input: 40000, Output: 500}, small)
	if p := w.promote(t, "7", "--require", "answered", "--models", filepath.Join(e.agent, "models.json")); !p.Promoted {
		t.Fatalf("run on %s: %+v", small, p)
	}
	w.readingIsPis(t, "run on another model", "7", run, run.End, small)
	if r := w.resolve(t, "8", []string{"PI_SESSION_MAX_CONTEXT_PCT=40"}, small); r.Reason != "context-too-full" {
		t.Fatalf("40%% bound, a job on %s, whose reading is %s of %d: %+v", small, tokens(run.End.Tokens), run.End.Window, r)
	}
	if r := w.resolve(t, "9", []string{"PI_SESSION_MAX_CONTEXT_PCT=40"}, sonnet); !r.Resume {
		t.Fatalf("40%% bound, a job on %s (the reading is %s's): %+v", sonnet, small, r)
	}

	// engage replay of the conversation as it stands estimates each of
	// its requests as pi read the context before it: every request of
	// every run on its branch, the compaction and the tool's result
	// among them.
	e.replayIsPis(t, w, "9")
}

// replayIsPis runs sessdb engage replay on job's staged transcript and
// holds each request's estimate to pi's reading before that request.
func (e *realPi) replayIsPis(t *testing.T, w *piWorker, job string) {
	t.Helper()
	file := w.staged(job)
	parent, prompt := map[string]string{}, map[string]bool{}
	for _, line := range bytes.Split(bytes.TrimSpace(e.stagedData(t, w, job)), []byte("\n")) {
		var entry struct {
			ID, ParentID string
			Message      struct{ Role string }
		}
		if err := json.Unmarshal(line, &entry); err != nil {
			t.Fatalf("%s: %q: %v", file, line, err)
		}
		parent[entry.ID] = entry.ParentID
		prompt[entry.ID] = entry.Message.Role == "user"
	}
	out := e.cli(t, nil, "engage", "replay", "--json", file)
	requests := 0
	for _, line := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		var r struct {
			Request  int
			Entry    string
			Estimate *int
		}
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("engage replay printed %q: %v", line, err)
		}
		if r.Request == 0 {
			continue // the summary
		}
		requests++
		// pi logs, with its reading before a request, the last entry it
		// has saved: a run's prompt is saved only after its first
		// request's reading.
		leaf := parent[r.Entry]
		if prompt[leaf] {
			leaf = parent[leaf]
		}
		pis, ok := w.estimates[leaf]
		if !ok {
			t.Fatalf("engage replay's request %d (%s, after %s): pi logged no request after that entry", r.Request, r.Entry, leaf)
		}
		if tokens(r.Estimate) != tokens(pis) {
			t.Errorf("engage replay estimates request %d (after %s) at %s tokens; pi read %s", r.Request, leaf, tokens(r.Estimate), tokens(pis))
		}
	}
	if requests != len(w.estimates) {
		t.Fatalf("engage replay saw %d requests; the runs promoted answered %d", requests, len(w.estimates))
	}
}

// realPi is what TestTheRealPiThroughTheCLI runs in: a stand-in model
// provider on loopback, and pi's config dir pointing at it.
type realPi struct {
	dir     string
	agent   string // PI_CODING_AGENT_DIR
	pi, ext string
	control string
	log     string // the stand-in's log of the requests it answered
	// endUsageScript is ../shared/tools/pi-end-usage.mjs, beside pi's
	// modules.
	endUsageScript string
	env            []string
}

// startRealPi skips unless SESSDB_PI_HOME names a folder with pi
// installed, and starts the stand-in.
func startRealPi(t *testing.T) *realPi {
	home := os.Getenv(piHomeEnv)
	if home == "" {
		t.Skipf("%s is unset: this test runs the real pi 0.58.3. To run it: mkdir DIR && (cd DIR && npm install @mariozechner/pi-coding-agent@0.58.3) && %s=DIR go test -run TestTheRealPi ./cmd/sessdb", piHomeEnv, piHomeEnv)
	}
	pi := filepath.Join(home, "node_modules", ".bin", "pi")
	if _, err := os.Stat(pi); err != nil {
		t.Fatalf("%s=%s: %v (npm install @mariozechner/pi-coding-agent@0.58.3 there)", piHomeEnv, home, err)
	}
	root := sharedtest.ModuleRoot()
	tools := filepath.Join(root, "..", "shared", "tools", "pi-mock")
	if _, err := os.Stat(tools); root == "" || err != nil {
		t.Skipf("../shared/tools/pi-mock is absent (it sits beside the repository, not in it): %v", err)
	}
	for _, bin := range []string{"node", "python3"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("%s is set, and %s is not on PATH: %v", piHomeEnv, bin, err)
		}
	}
	// sessdb reads transcripts as pi 0.58.3 does. A later pi can differ
	// in ways this test would take for sessdb's: 0.73.1's print mode
	// compacts at the end of a run, after its last reading.
	if v, err := exec.Command(pi, "--version").CombinedOutput(); err != nil || strings.TrimSpace(string(v)) != "0.58.3" {
		t.Fatalf("%s's pi is %q (%v); this test holds sessdb to pi 0.58.3", piHomeEnv, strings.TrimSpace(string(v)), err)
	}
	dir := t.TempDir()
	e := &realPi{
		dir: dir, agent: filepath.Join(dir, "agent"),
		pi: pi, ext: filepath.Join(tools, "usage-ext.js"),
		control: filepath.Join(dir, "control.json"), log: filepath.Join(dir, "requests.jsonl"),
	}
	for _, d := range []string{e.agent, filepath.Join(dir, "home"), filepath.Join(dir, "end-usage")} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// pi-end-usage.mjs imports pi's modules from beside itself.
	e.endUsageScript = filepath.Join(dir, "end-usage", "pi-end-usage.mjs")
	script, err := os.ReadFile(filepath.Join(tools, "..", "pi-end-usage.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, e.endUsageScript, script)
	if err := os.Symlink(filepath.Join(home, "node_modules"), filepath.Join(dir, "end-usage", "node_modules")); err != nil {
		t.Fatal(err)
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	models, err := os.ReadFile(filepath.Join(tools, "models.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(models, []byte("127.0.0.1:18765")) {
		t.Fatalf("pi-mock's models.json no longer points at 127.0.0.1:18765:\n%s", models)
	}
	settings, err := os.ReadFile(filepath.Join(tools, "settings.json"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(e.agent, "models.json"), bytes.ReplaceAll(models, []byte("127.0.0.1:18765"), []byte("127.0.0.1:"+port)))
	writeFile(t, filepath.Join(e.agent, "settings.json"), settings)
	writeFile(t, e.control, []byte("{}"))

	mock := exec.Command("python3", filepath.Join(tools, "mock_anthropic.py"), port, e.control, e.log)
	var mockLog bytes.Buffer
	mock.Stderr = &mockLog
	if err := mock.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		mock.Process.Kill()
		mock.Wait()
		if t.Failed() {
			t.Logf("the stand-in's log:\n%s", mockLog.Bytes())
		}
	})
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		c, err := net.Dial("tcp", "127.0.0.1:"+port)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stand-in for pi's provider never listened on %s: %v", port, err)
		}
	}
	e.env = []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + filepath.Join(dir, "home"), "PI_CODING_AGENT_DIR=" + e.agent,
		"PI_OFFLINE=1", "ANTHROPIC_API_KEY=mock-key",
	}
	return e
}

func writeFile(t *testing.T, name string, data []byte) {
	t.Helper()
	if err := os.WriteFile(name, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// sessdb runs the CLI as a worker does, a process of its own whose only
// configuration is env (the store's, and a bound), and decodes its JSON into
// out; any exit but 0 fails the test.
func (e *realPi) sessdb(t *testing.T, env []string, out any, args ...string) {
	t.Helper()
	stdout := e.cli(t, env, args...)
	line, _, _ := bytes.Cut(stdout, []byte("\n"))
	if err := json.Unmarshal(line, out); err != nil {
		t.Fatalf("sessdb %s printed %q: %v", strings.Join(args, " "), stdout, err)
	}
}

// cli runs the CLI as a process of its own whose only configuration is
// env, and returns its stdout; any exit but 0 fails the test.
func (e *realPi) cli(t *testing.T, env []string, args ...string) []byte {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append([]string{cliChildEnv + "=1", "GORACE=atexit_sleep_ms=0"}, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("sessdb %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.Bytes()
}

// dumpedKey is what the test reads of dump --json's object for a key.
type dumpedKey struct {
	Record struct {
		Gen   uint64
		Bytes int64
	}
	ResumeChain uint64 `json:"resume_chain"`
	Context     *struct {
		Tokens int
		Window int
		Model  string
	}
}

// dumped is what dump --json says of the worker's conversation.
func (w *piWorker) dumped(t *testing.T) dumpedKey {
	t.Helper()
	var k dumpedKey
	w.e.sessdb(t, w.env, &k, append([]string{"dump", "--json", "--key", w.key}, w.dumpArgs...)...)
	return k
}

// endUsage is pi's own reading of job's transcript, as pi-end-usage.mjs
// computes it with pi's code: what pi reports when it loads it.
func (e *realPi) endUsage(t *testing.T, w *piWorker, job string) (u struct {
	Tokens *int
	Model  string
	Error  string
}) {
	t.Helper()
	file := w.staged(job)
	out, err := exec.Command("node", e.endUsageScript, file).Output()
	if err != nil {
		t.Fatalf("pi-end-usage.mjs %s: %v", file, err)
	}
	var byFile map[string]json.RawMessage
	if err := json.Unmarshal(out, &byFile); err != nil || len(byFile) != 1 {
		t.Fatalf("pi-end-usage.mjs printed %s (%v)", out, err)
	}
	for _, v := range byFile {
		if err := json.Unmarshal(v, &u); err != nil || u.Error != "" {
			t.Fatalf("pi-end-usage.mjs: %s (%v)", v, err)
		}
	}
	return u
}

// staged is the path of job's staged transcript, where resolve wrote it
// and pi writes.
func (w *piWorker) staged(job string) string {
	return filepath.Join(w.jobs, job, store.StagedDirName, store.TranscriptName)
}

// stagedData returns job's staged transcript.
func (e *realPi) stagedData(t *testing.T, w *piWorker, job string) []byte {
	t.Helper()
	data, err := os.ReadFile(w.staged(job))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// mockControl is the stand-in's answer to each request (mock_anthropic.py's
// docstring).
type mockControl struct {
	Input        int       `json:"input"`
	Output       int       `json:"output"`
	CacheRead    int       `json:"cacheRead"`
	CacheWrite   int       `json:"cacheWrite"`
	HTTPStatus   int       `json:"http_status,omitempty"`
	ErrorMessage string    `json:"error_message,omitempty"`
	Text         string    `json:"text,omitempty"`
	Chunks       int       `json:"chunks,omitempty"`
	Delay        float64   `json:"delay,omitempty"`
	Tool         *mockTool `json:"tool,omitempty"`
}

// mockTool is a tool call the stand-in makes before its text answer.
type mockTool struct {
	Name  string            `json:"name"`
	Input map[string]string `json:"input"`
}

// piUsage is pi's getContextUsage() as usage-ext.js logs it.
type piUsage struct {
	Tokens *int `json:"tokens"` // null: unknown (after a compaction, until a fresh usage)
	Window int  `json:"contextWindow"`
}

func tokens(n *int) string {
	if n == nil {
		return "unknown"
	}
	return strconv.Itoa(*n)
}

// piRun is what a run of pi showed: its exit status, the messages of its
// first request, and its own reading at the end.
type piRun struct {
	Exit          int
	FirstMessages int
	LastContext   piUsage // pi's reading for its last request
	End           piUsage // pi's reading at the end of the run
	ends          int
	requests      []usageEvent // pi's reading before each request
	killed        bool         // during its last request
}

// turn runs one print-mode turn of the real pi on job's staged transcript,
// as the README's loop does (--mode json, as a worker that reads its
// events would), on model if not "".
func (e *realPi) turn(t *testing.T, w *piWorker, job string, answer mockControl, model string) piRun {
	t.Helper()
	cmd, usage := e.piCmd(t, w, job, answer, model)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	exit := 0
	if err := cmd.Run(); err != nil {
		x, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("pi: %v", err)
		}
		exit = x.ExitCode()
	}
	run := readRun(t, usage)
	run.Exit = exit
	if run.ends != 1 {
		t.Fatalf("pi's run logged %d ends (usage-ext.js); want 1. Its output:\n%s", run.ends, tail(out.Bytes(), 2000))
	}
	return run
}

// readRun reads what usage-ext.js logged of a run.
func readRun(t *testing.T, usage string) piRun {
	t.Helper()
	var run piRun
	for _, ev := range readUsageLog(t, usage) {
		switch ev.Ev {
		case "context":
			if run.FirstMessages == 0 {
				run.FirstMessages = ev.Messages
			}
			run.LastContext = ev.Usage
			run.requests = append(run.requests, ev)
		case "agent_end":
			run.End = ev.Usage
			run.ends++
		}
	}
	return run
}

// turnKilled starts a turn whose text answers stream slowly and kills pi
// (SIGKILL, as a container's end) once the stand-in has its nth request,
// and returns what pi logged before.
func (e *realPi) turnKilled(t *testing.T, w *piWorker, job string, answer mockControl, nth int) piRun {
	t.Helper()
	answer.Text, answer.Chunks, answer.Delay = strings.Repeat("slow ", 30), 30, 0.1
	want := countLines(t, e.log) + nth
	cmd, usage := e.piCmd(t, w, job, answer, "")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); countLines(t, e.log) < want; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("pi sent fewer than %d requests in a minute", nth)
		}
	}
	time.Sleep(300 * time.Millisecond) // a few chunks into a 3 s answer
	cmd.Process.Kill()
	cmd.Wait()
	run := readRun(t, usage)
	run.killed = true
	return run
}

func (e *realPi) piCmd(t *testing.T, w *piWorker, job string, answer mockControl, model string) (*exec.Cmd, string) {
	t.Helper()
	control, err := json.Marshal(answer)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, e.control, control)
	usage := filepath.Join(w.jobs, "usage-"+job+".jsonl")
	args := []string{"-p", "--mode", "json", "--session", w.staged(job), "-e", e.ext}
	if answer.Tool == nil {
		args = append(args, "--no-tools")
	}
	if model != "" {
		args = append(args, "--model", model)
	}
	cmd := exec.Command(e.pi, append(args, fmt.Sprintf("the prompt of job %s", job))...)
	cmd.Env = append(append([]string{}, e.env...), "PI_USAGE_LOG="+usage)
	cmd.Dir = e.dir
	return cmd, usage
}

type usageEvent struct {
	Ev       string  `json:"ev"`
	Usage    piUsage `json:"usage"`
	Messages int     `json:"messages"`
	Leaf     string  `json:"leaf"` // the entry the request continues
}

func readUsageLog(t *testing.T, name string) []usageEvent {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatalf("pi logged no usage (usage-ext.js): %v", err)
	}
	defer f.Close()
	var evs []usageEvent
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var ev usageEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("%s: %q: %v", name, sc.Text(), err)
		}
		evs = append(evs, ev)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return evs
}

func countLines(t *testing.T, name string) int {
	t.Helper()
	data, err := os.ReadFile(name)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(data, []byte("\n"))
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
