package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"sessdb/internal/sample"
	"sessdb/store"
)

// A variable that looks like sessdb's but is not one it reads is named on
// stderr, once, with the closest one it does, by every command that reads
// the configuration; a known variable, and a command that reads none,
// say nothing.
func TestUnknownVariableWarns(t *testing.T) {
	atSampleTime(t)
	root := copySample(t)
	t.Setenv("PI_SESSIONS_MAX_CONTEXT_PCT", "50")
	t.Setenv("PI_SESSION_MODELS_FILE", "") // known: promote reads it
	warning := "PI_SESSIONS_MAX_CONTEXT_PCT is not a variable sessdb reads, and is ignored; did you mean PI_SESSION_MAX_CONTEXT_PCT?"
	jobDir := t.TempDir()
	for _, args := range [][]string{
		{"dump", root},
		{"check", root},
		{"reap", "--dry-run", root},
		{"stats", root},
		{"resolve", "--sessions-dir", root, "--key", sample.Resumable, "--job-dir", jobDir, "--pi-version", "0.58.3"},
		{"promote", "--sessions-dir", root, "--job-dir", jobDir, "--pi-version", "0.58.3"},
		{"migrate", "--dry-run", root},
	} {
		_, _, errs := runCLI(t, args...)
		if strings.Count(errs, warning) != 1 || strings.Count(errs, "PI_SESSION_MODELS_FILE") != 0 {
			t.Errorf("%s: stderr %q; want the warning once", args[0], errs)
		}
	}
	if _, _, errs := runCLI(t, "version"); errs != "" {
		t.Errorf("version reads no configuration, but said %q", errs)
	}
	// In the JSON log format it is one warn line like any other.
	_, _, errs := runCLI(t, "dump", "--log-format", "json", root)
	var line struct {
		Level, Message string
		Exit           *int
	}
	if err := json.Unmarshal([]byte(strings.Split(errs, "\n")[0]), &line); err != nil || line.Level != "warn" || line.Message != warning || line.Exit != nil {
		t.Errorf("json warning %q: %v", errs, err)
	}
	for name, want := range map[string]string{
		"PI_SESSIONS_TTL":            "PI_SESSIONS_TTL_DAYS",
		"PI_SESSION_TTL_DAYS":        "PI_SESSIONS_TTL_DAYS",
		"PI_SESSION_DIR":             "PI_SESSIONS_DIR",
		"PI_SESSIONS_MAX_BYTES":      "PI_SESSION_MAX_BYTES",
		"PI_SESSION_MAX_RESUME":      "PI_SESSION_MAX_RESUME_CHAIN",
		"PI_SESSION_MODEL_FILE":      "PI_SESSION_MODELS_FILE",
		"PI_SESSION_REQUIRE":         "PI_SESSION_PROMOTE_REQUIRE",
		"PI_SESSION_MAX_AGE":         "PI_SESSION_MAX_AGE_DAYS",
		"PI_SESSIONS_MAX_CONTEXT_PC": "PI_SESSION_MAX_CONTEXT_PCT",
	} {
		if got := closest(name, knownEnv()); got != want {
			t.Errorf("closest to %s: %s, want %s", name, got, want)
		}
	}
}

// The known list is every knob's variable, the promote ones included.
func TestKnownVariables(t *testing.T) {
	got := strings.Join(knownEnv(), " ")
	want := "PI_SESSIONS_DIR PI_SESSIONS_ETCD_CA PI_SESSIONS_ETCD_CERT PI_SESSIONS_ETCD_ENDPOINTS PI_SESSIONS_ETCD_KEY PI_SESSIONS_ETCD_PASSWORD PI_SESSIONS_ETCD_PREFIX PI_SESSIONS_ETCD_TIMEOUT PI_SESSIONS_ETCD_USER PI_SESSIONS_TRANSCRIPTS_DIR PI_SESSIONS_TTL_DAYS PI_SESSION_MAX_AGE_DAYS PI_SESSION_MAX_BYTES PI_SESSION_MAX_CONTEXT_PCT PI_SESSION_MAX_RESUME_CHAIN PI_SESSION_MODELS_FILE PI_SESSION_PROMOTE_REQUIRE"
	if got != want {
		t.Errorf("knownEnv = %s\nwant %s", got, want)
	}
}

// resolve of a root that does not exist is absent, as the legacy store
// gave, with one warning on stderr: a misspelt root must not pass for a
// new conversation in silence.
func TestResolveWarnsOfAMissingRoot(t *testing.T) {
	clearEnv(t)
	missing := filepath.Join(t.TempDir(), "sesions")
	code, out, errs := runCLI(t, "resolve", "--sessions-dir", missing, "--key", sample.Resumable, "--job-dir", t.TempDir(), "--pi-version", "0.58.3")
	if code != exitOK || !strings.Contains(out, `"reason":"absent"`) {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	if strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "sessions root") || !strings.Contains(errs, "does not exist") || !strings.Contains(errs, missing) {
		t.Fatalf("stderr %q; want one warning naming the root", errs)
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Fatal("resolve made the missing root")
	}
	root := copySample(t)
	if _, _, errs := runCLI(t, "resolve", "--sessions-dir", root, "--key", store.Key("a", "b", "new"), "--job-dir", t.TempDir(), "--pi-version", "0.58.3"); errs != "" {
		t.Fatalf("a new key under a root that exists warned: %q", errs)
	}
}

// A message about a name the configuration gives quotes it whole. They
// were cut at 64 bytes, like any bad value: on a deep root (a Kubernetes
// volume's path is about 100 bytes) the warning that asks whether the
// root is misspelt cut off its last name, the one misspelt, the refusal
// of an unexpanded variable the variable, and a Kubernetes service's
// endpoint its port. A runaway value (longer
// than any path the system opens) is still cut.
func TestAMessageAboutAPathQuotesItWhole(t *testing.T) {
	clearEnv(t)
	deep := filepath.Join(t.TempDir(), strings.Repeat("d", 100))
	if err := os.Mkdir(deep, 0o700); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(deep, "sesions")
	job := filepath.Join(deep, "job")
	for _, c := range []struct {
		what string
		args []string
		code int
		want string
	}{
		{"resolve onto a missing root", []string{"resolve", "--sessions-dir", missing, "--key", sample.Resumable, "--job-dir", job, "--pi-version", "0.58.3"}, exitOK, strconv.Quote(missing) + " does not exist"},
		{"a job dir whose parent is missing", []string{"resolve", "--sessions-dir", missing, "--key", sample.Resumable, "--job-dir", filepath.Join(missing, "job"), "--pi-version", "0.58.3"}, exitUsage, strconv.Quote(filepath.Join(missing, "job")) + ": its parent"},
		{"an unexpanded variable at a deep root's end", []string{"dump", filepath.Join(deep, "$SESSIONS")}, exitUsage, strconv.Quote(filepath.Join(deep, "$SESSIONS")) + " names a variable"},
		{"a job dir not UTF-8 at its end", []string{"resolve", "--sessions-dir", missing, "--key", sample.Resumable, "--job-dir", job + "\xff", "--pi-version", "0.58.3"}, exitUsage, strconv.Quote(job+"\xff") + " is not valid UTF-8"},
		{"a long endpoint's bad port", []string{"dump", "--etcd-endpoints", "https://etcd-0.etcd-headless.sessdb-production.svc.cluster.local:99999", "--transcripts-dir", deep}, exitUsage, `"https://etcd-0.etcd-headless.sessdb-production.svc.cluster.local:99999", is not`},
		{"a transcripts dir that is not there", []string{"dump", "--etcd-endpoints", "http://127.0.0.1:1", "--transcripts-dir", missing}, exitUsage, strconv.Quote(missing) + ": no such file"},
	} {
		code, _, errs := runCLI(t, c.args...)
		if code != c.code || !strings.Contains(errs, c.want) || strings.Contains(errs, "bytes)") {
			t.Errorf("%s: exit %d, stderr %q; want exit %d and %s", c.what, code, errs, c.code, c.want)
		}
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Fatal("the missing root was made")
	}
	runaway := "/" + strings.Repeat("r", unix.PathMax) + "/$SESSIONS"
	code, _, errs := runCLI(t, "dump", runaway)
	if code != exitUsage || !strings.Contains(errs, fmt.Sprintf("…(%d bytes) names a variable", len(runaway))) || len(errs) > 400 {
		t.Errorf("a runaway root: exit %d, stderr %q; want exit 2, the value cut", code, errs)
	}
}

// reap says of each expired key whether it removed it: one holding a
// subdirectory is not removed, whole, named on stderr, exit 1; what an
// interrupted reap left is finished.
func TestReapSaysWhyAKeyIsNotRemoved(t *testing.T) {
	atSampleTime(t)
	root := copySample(t)
	if err := os.MkdirAll(filepath.Join(root, sample.Expired, "notes"), 0o700); err != nil {
		t.Fatal(err)
	}
	leftover := store.ReapedPrefix + sample.Resumable + "-0123456789abcdef"
	os.Mkdir(filepath.Join(root, leftover), 0o700)
	os.WriteFile(filepath.Join(root, leftover, "venue"), []byte("local"), 0o600)
	before := tree(t, filepath.Join(root, sample.Expired))

	code, out, errs := runCLI(t, "reap", root)
	if code != exitFault {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	for _, want := range []string{
		"not removed   " + sample.Expired + `  (expired, but "notes" is a directory, not the store's; nothing was removed)`,
		"finished      " + leftover + "  (an interrupted reap of " + sample.Resumable + ": its dir removed)",
		"reaped 0 keys and 0 temp files; kept 4 keys, skipped 1, not removed 1, finished 1 (TTL 14 days)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	if strings.Count(errs, "\n") != 1 || !strings.Contains(errs, sample.Expired) || !strings.Contains(errs, "notes") {
		t.Errorf("stderr %q; want the key named once", errs)
	}
	if tree(t, filepath.Join(root, sample.Expired)) != before {
		t.Error("the key reap refused changed")
	}
	if _, err := os.Lstat(filepath.Join(root, leftover)); !os.IsNotExist(err) {
		t.Error("the leftover is still there")
	}

	_, out, _ = runCLI(t, "reap", "--json", "--dry-run", root)
	var a reapAction
	if json.Unmarshal([]byte(strings.Split(out, "\n")[0]), &a) != nil || a.Action != reapRefuseKey || a.Key == nil || *a.Key != sample.Expired || a.Detail == nil {
		t.Errorf("reap --json: %s", out)
	}
}

// check --repair --accept KEY records the transcript in place and check is
// then clean for it; --quarantine KEY moves the key aside and says where;
// both need --repair, a key, and one of them; an accept refused exits 1.
func TestCheckAcceptAndQuarantine(t *testing.T) {
	atSampleTime(t)
	root := copySample(t)
	p := filepath.Join(root, sample.LongChain, "current.jsonl")
	b, _ := os.ReadFile(p)
	os.WriteFile(p, []byte(strings.Replace(string(b), "feedback 5", "feedback 6", 1)), 0o600)
	if code, _, _ := runCLI(t, "check", root); code != exitIssues {
		t.Fatalf("the edited key: check exit %d, want 3", code)
	}
	for _, args := range [][]string{
		{"check", "--accept", sample.LongChain, root},
		{"check", "--quarantine", sample.LongChain, root},
		{"check", "--repair", "--accept", "nothex", root},
		{"check", "--repair", "--accept", sample.LongChain, "--quarantine", sample.Mixed, root},
	} {
		if code, out, errs := runCLI(t, args...); code != exitUsage || out != "" || strings.Count(errs, "\n") != 1 {
			t.Errorf("%v: exit %d, %q, %q; want a usage error", args, code, out, errs)
		}
	}
	code, out, errs := runCLI(t, "check", "--repair", "--accept", sample.LongChain, root)
	if code != exitOK || !strings.Contains(out, "notice   "+sample.LongChain+"/current.jsonl: accepted: ") || !strings.Contains(out, "repair: recorded current.jsonl (") ||
		!strings.Contains(out, "checked 1 entry (1 key): 1 problem, 1 notice; repaired 2, 0 problems remaining") {
		t.Fatalf("accept: exit %d\n%s%s", code, out, errs)
	}
	if code, out, _ := runCLI(t, "check", root); code != exitOK {
		t.Fatalf("check after the accept: exit %d\n%s", code, out)
	}
	if code, out, errs := runCLI(t, "check", "--repair", "--accept", sample.Legacy, root); code != exitFault || !strings.Contains(out, "not repaired: accept") || !strings.Contains(errs, sample.Legacy) {
		t.Fatalf("a refused accept: exit %d\n%s%s", code, out, errs)
	}

	code, out, errs = runCLI(t, "check", "--json", "--repair", "--quarantine", sample.Mixed, root)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var f store.Finding
	if code != exitOK || json.Unmarshal([]byte(lines[len(lines)-2]), &f) != nil || f.Kind != store.KindQuarantined || !f.Repaired {
		t.Fatalf("quarantine: exit %d\n%s%s", code, out, errs)
	}
	if _, ok := store.QuarantinedKey(f.Path); !ok {
		t.Fatalf("quarantined to %q", f.Path)
	}
	if _, err := os.Stat(filepath.Join(root, f.Path, "current.jsonl")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, sample.Mixed)); !os.IsNotExist(err) {
		t.Fatal("the quarantined key is still there")
	}
	if code, out, _ := runCLI(t, "check", root); code != exitOK || !strings.Contains(out, "notice   "+f.Path+": quarantined: ") {
		t.Fatalf("check after the quarantine: exit %d\n%s", code, out)
	}
	// A quarantine not done (its key dir gone since) is an entry check
	// could not do, as a refused accept is.
	if code, out, errs := runCLI(t, "check", "--repair", "--quarantine", sample.Mixed, root); code != exitFault || !strings.Contains(out, "not repaired: ") || !strings.Contains(errs, sample.Mixed) {
		t.Fatalf("a quarantine of a key no longer there: exit %d\n%s%s", code, out, errs)
	}
}
