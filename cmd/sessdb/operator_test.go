package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// An empty positional argument is a variable that was not set
// (`sessdb reap "$OLD_ROOT"`), never a request for the configured root:
// taken as absent, the walk went to PI_SESSIONS_DIR, another root than
// the one the operator meant, and reap removed its expired keys. Every
// command that takes a DIR or FILE refuses it, exit 2, naming the
// argument, and touches nothing.
func TestAnEmptyArgumentIsAUsageError(t *testing.T) {
	clearEnv(t)
	root := copySample(t)
	t.Setenv("PI_SESSIONS_DIR", root)
	before, _ := os.ReadDir(root)
	for _, args := range [][]string{
		{"reap", ""},
		{"reap", "--json", ""},
		{"dump", ""},
		{"check", "--repair", ""},
		{"stats", ""},
		{"migrate", "--dry-run", ""},
		{"engage", "replay", ""},
	} {
		code, out, errs := runCLI(t, append(args, "--log-format", "console")...)
		if code != exitUsage || out != "" || !strings.Contains(errs, "is empty") {
			t.Errorf("sessdb %s: exit %d, stdout %q, stderr %q; want exit 2, nothing on stdout, the argument named empty", strings.Join(args, " "), code, brief(out), errs)
		}
	}
	after, _ := os.ReadDir(root)
	if len(after) != len(before) {
		t.Errorf("the configured root had %d names, has %d: a command given an empty DIR acted on it", len(before), len(after))
	}
	if _, err := os.Stat(filepath.Join(root, "55c5b4543d2fe748d576d4ed795b9167")); err != nil {
		t.Errorf("the sample's expired key is gone: %v", err)
	}
}

// The command list is where an operator looks first: a command that runs
// on a fleet (it takes --etcd-endpoints) and whose one-liner names the
// sessions root it works on names the fleet too, or the list reads as if
// dump and check knew only a sessions root.
func TestOneLinersNameTheFleetWhereTheCommandRunsOnOne(t *testing.T) {
	for _, c := range commands {
		fs := c.newFlags()
		c.bind(fs)
		if fs.Lookup("etcd-endpoints") == nil || !strings.Contains(c.short, "sessions root") {
			continue
		}
		if !strings.Contains(c.short, "fleet") {
			t.Errorf("sessdb %s: its one-liner %q names a sessions root and not the fleet it also runs on", c.name, c.short)
		}
	}
}

// A flag error names the flag as help, the usage line and docs/cli.md
// spell it, with two dashes: the flag package writes "-bogus" for the
// "--bogus" an operator typed, beside sessdb's own "--history: ...".
func TestFlagErrorsNameTheFlagWithTwoDashes(t *testing.T) {
	clearEnv(t)
	for _, c := range []struct {
		args []string
		flag string
	}{
		{[]string{"dump", "--bogus"}, "--bogus"},
		{[]string{"dump", "--log-format", "console", "--key"}, "--key"},
		{[]string{"dump", "--json=maybe"}, "--json"},
		{[]string{"check", "--deep-check-timeout", "soon"}, "--deep-check-timeout"},
		{[]string{"engage", "replay", "--window", "wide", "f"}, "--window"},
	} {
		args := c.args
		if !slices.Contains(args, "--log-format") {
			args = append(args, "--log-format", "console")
		}
		code, _, errs := runCLI(t, args...)
		if code != exitUsage || !strings.Contains(errs, " "+c.flag) {
			t.Errorf("%v: exit %d, %q; want exit 2 naming %s", c.args, code, errs, c.flag)
		}
	}
}

// A flag whose value is left out (`--pi-version $V --allow-rewrite` with V
// empty, unquoted) takes the next flag for its value: promote stamped the
// key with the pi version "--allow-rewrite", so that every later job
// cold-starts pi-version-changed, and --allow-rewrite was off without a
// word. A value that is the name of one of the command's flags is a usage
// error, exit 2, naming both, and nothing is written; the --flag=value
// form still gives such a value on purpose.
func TestAFlagIsNotTakenForAnotherFlagsValue(t *testing.T) {
	clearEnv(t)
	root := copySample(t)
	key := "9ddb56ddcfac930962d0f4d375d2fd07"
	job := t.TempDir()
	if code, out, errs := runCLI(t, "resolve", "--sessions-dir", root, "--key", key, "--job-dir", job, "--pi-version", "0.58.3"); code != exitOK {
		t.Fatalf("resolve: exit %d, %s%s", code, out, errs)
	}
	staged := filepath.Join(job, "session", "current.jsonl")
	f, err := os.OpenFile(staged, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"type":"message","id":"x","parentId":null,"timestamp":"2026-11-29T09:00:00Z","message":{"role":"user","content":"hi"}}` + "\n")
	f.Close()
	for _, args := range [][]string{
		{"promote", "--sessions-dir", root, "--job-dir", job, "--pi-version", "--allow-rewrite"},
		{"promote", "--sessions-dir", root, "--job-dir", job, "--allow-rewrite", "--pi-version", "-log-level", "info"},
		{"dump", "--key", key, "--as-job", "--venue", "local", "--pi-version", "--json", root},
		{"reap", "--dry-run", "--ttl-days", "--json", root},
	} {
		code, out, errs := runCLI(t, append(args, "--log-format", "console")...)
		if code != exitUsage || out != "" || !strings.Contains(errs, "is a flag") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 saying the value is a flag", args, code, brief(out), errs)
		}
	}
	if code, out, errs := runCLI(t, "dump", "--json", "--key", key, root); code != exitOK || !strings.Contains(out, `"pi_version":"0.58.3"`) || !strings.Contains(out, `"gen":2,`) {
		t.Errorf("after the refused promotes the key is not as it was: exit %d, %s%s", code, out, errs)
	}
	// Given with "=", a value that looks like a flag is the operator's.
	code, out, errs := runCLI(t, "promote", "--sessions-dir", root, "--job-dir", job, "--pi-version=--allow-rewrite")
	if code != exitOK || !strings.Contains(out, `"promoted":true`) {
		t.Errorf("--pi-version=--allow-rewrite: exit %d, %s%s; want it promoted with that pi version", code, out, errs)
	}
}

// A job dir whose name begins or ends with white space is a quoting
// mistake (a value read from a file with its newline, a stray blank), as
// a sessions root's is: resolve made that second directory beside the
// one the worker mounts ("/jobs/1\n", " " in the working directory) and
// staged the transcript where pi never looks. It is refused, exit 2,
// and nothing is made.
func TestResolveRefusesAJobDirWithWhiteSpaceAround(t *testing.T) {
	clearEnv(t)
	root := copySample(t)
	parent := t.TempDir()
	t.Chdir(parent)
	for _, dir := range []string{" ", filepath.Join(parent, "job") + "\n", " " + filepath.Join(parent, "job"), filepath.Join(parent, "job") + "\u00a0"} {
		code, out, errs := runCLI(t, "resolve", "--sessions-dir", root, "--key", "4668107cac2e99b44415c5606b32ef14", "--job-dir", dir, "--pi-version", "0.58.3", "--log-format", "console")
		if code != exitUsage || out != "" || !strings.Contains(errs, "white space") {
			t.Errorf("--job-dir %q: exit %d, stdout %q, stderr %q; want exit 2 naming the white space", dir, code, out, errs)
		}
	}
	if names, _ := os.ReadDir(parent); len(names) != 0 {
		t.Errorf("resolve made %v", names)
	}
}

// "-" is stdout to most tools; --svg - wrote a chart to a file named "-"
// in the working directory, and the operator who piped it got nothing.
// It is a usage error, exit 2, and nothing is written; ./- names that file.
func TestSVGDashIsNotAFileNamedDash(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	fixture := filepath.Join(t.TempDir(), "t.jsonl")
	if err := os.WriteFile(fixture, []byte(header), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	code, out, errs := runCLI(t, "engage", "replay", "--svg", "-", fixture, "--log-format", "console")
	if code != exitUsage || out != "" || !strings.Contains(errs, "--svg") {
		t.Errorf("--svg -: exit %d, stdout %q, stderr %q; want exit 2 naming --svg", code, brief(out), errs)
	}
	if names, _ := os.ReadDir(dir); len(names) != 0 {
		t.Errorf("--svg - wrote %v", names)
	}
	if code, _, errs := runCLI(t, "engage", "replay", "--svg", "./-", fixture); code != exitOK {
		t.Errorf("--svg ./-: exit %d, %s; want the chart written to ./-", code, errs)
	}
}

// PI_SESSION_MODELS_FILE=' ' (an env file's stray blank) was opened as
// the file " ", and the error read "open  : no such file or directory",
// the name invisible. A models file whose name begins or ends with white
// space is refused as a sessions root's is, naming the white space, exit 2.
func TestModelsFileWithWhiteSpaceAroundIsNamed(t *testing.T) {
	clearEnv(t)
	root := copySample(t)
	job := t.TempDir()
	if code, out, errs := runCLI(t, "resolve", "--sessions-dir", root, "--key", "4668107cac2e99b44415c5606b32ef14", "--job-dir", job, "--pi-version", "0.58.3"); code != exitOK {
		t.Fatalf("resolve: exit %d, %s%s", code, out, errs)
	}
	for _, v := range []string{" ", "models.json\n"} {
		t.Setenv("PI_SESSION_MODELS_FILE", v)
		code, out, errs := runCLI(t, "promote", "--sessions-dir", root, "--job-dir", job, "--pi-version", "0.58.3", "--log-format", "console")
		if code != exitUsage || out != "" || !strings.Contains(errs, "white space") {
			t.Errorf("PI_SESSION_MODELS_FILE=%q: exit %d, stdout %q, stderr %q; want exit 2 naming the white space", v, code, out, errs)
		}
	}
}

// `dump --json --key "$KEY"` with KEY empty printed every key of the root,
// exit 0: a caller that asked for one key's verdict read another's on its
// first line. An empty --key is refused, exit 2, as check's empty
// --accept and --quarantine are.
func TestDumpEmptyKeyIsAUsageError(t *testing.T) {
	clearEnv(t)
	root := copySample(t)
	code, out, errs := runCLI(t, "dump", "--json", "--key", "", root, "--log-format", "console")
	if code != exitUsage || out != "" || !strings.Contains(errs, "--key") {
		t.Errorf(`dump --json --key "": exit %d, %d lines on stdout, stderr %q; want exit 2 naming --key, nothing on stdout`, code, strings.Count(out, "\n"), errs)
	}
}

// A root written "~/sessions" in an env file, a unit's Environment= or a
// Python env dict reaches sessdb unexpanded: only a shell expands "~".
// Taken as a relative path, resolve cold-started every key (the root is
// missing) and promote made ./~/sessions in the worker's working
// directory and promoted into it, a second root no other worker reads.
// A sessions root or transcripts dir whose first component begins with
// "~" is a configuration error naming it, exit 2, and nothing is made.
func TestAnUnexpandedTildeIsAConfigurationError(t *testing.T) {
	clearEnv(t)
	cwd := t.TempDir()
	t.Chdir(cwd)
	job := filepath.Join(t.TempDir(), "job")
	for _, root := range []string{"~/sessions", "~", "~pi/sessions"} {
		t.Setenv("PI_SESSIONS_DIR", root)
		for _, args := range [][]string{
			{"resolve", "--key", "4668107cac2e99b44415c5606b32ef14", "--job-dir", job, "--pi-version", "1"},
			{"promote", "--job-dir", job, "--pi-version", "1"},
			{"dump"},
			{"reap", "--dry-run"},
		} {
			code, out, errs := runCLI(t, append(args, "--log-format", "console")...)
			if code != exitUsage || out != "" || !strings.Contains(errs, "~") || !strings.Contains(errs, "shell") {
				t.Errorf("PI_SESSIONS_DIR=%s %v: exit %d, stdout %q, stderr %q; want exit 2 naming the unexpanded ~", root, args[0], code, brief(out), errs)
			}
		}
	}
	t.Setenv("PI_SESSIONS_DIR", "")
	code, _, errs := runCLI(t, "dump", "~/sessions", "--log-format", "console")
	if code != exitUsage || !strings.Contains(errs, "shell") {
		t.Errorf("dump '~/sessions': exit %d, %q; want exit 2 naming the unexpanded ~", code, errs)
	}
	code, _, errs = runCLI(t, "dump", "--etcd-endpoints", "http://127.0.0.1:1", "--transcripts-dir", "~/transcripts", "--log-format", "console")
	if code != exitUsage || !strings.Contains(errs, "shell") {
		t.Errorf("--transcripts-dir '~/transcripts': exit %d, %q; want exit 2 naming the unexpanded ~", code, errs)
	}
	if names, _ := os.ReadDir(cwd); len(names) != 0 {
		t.Errorf("made in the working directory: %v", names)
	}
}

// The same trap with a variable: a docker --env-file, a unit's
// Environment= or EnvironmentFile= pass "$HOME/sessions" unexpanded, and
// promote made ./$HOME/sessions in the worker's working directory. A
// sessions root or transcripts dir naming a variable ($NAME, ${NAME})
// is a configuration error, exit 2, and nothing is made.
func TestAnUnexpandedVariableIsAConfigurationError(t *testing.T) {
	clearEnv(t)
	cwd := t.TempDir()
	t.Chdir(cwd)
	job := filepath.Join(t.TempDir(), "job")
	for _, root := range []string{"$HOME/sessions", "${STATE_DIRECTORY}/sessions", "/var/lib/$USER/sessions"} {
		t.Setenv("PI_SESSIONS_DIR", root)
		for _, args := range [][]string{
			{"resolve", "--key", "4668107cac2e99b44415c5606b32ef14", "--job-dir", job, "--pi-version", "1"},
			{"promote", "--job-dir", job, "--pi-version", "1"},
			{"dump"},
		} {
			code, out, errs := runCLI(t, append(args, "--log-format", "console")...)
			if code != exitUsage || out != "" || !strings.Contains(errs, "variable") {
				t.Errorf("PI_SESSIONS_DIR=%s %v: exit %d, stdout %q, stderr %q; want exit 2 naming the unexpanded variable", root, args[0], code, brief(out), errs)
			}
		}
	}
	t.Setenv("PI_SESSIONS_DIR", "")
	code, _, errs := runCLI(t, "dump", "--etcd-endpoints", "http://127.0.0.1:1", "--transcripts-dir", "$TRANSCRIPTS", "--log-format", "console")
	if code != exitUsage || !strings.Contains(errs, "variable") {
		t.Errorf("--transcripts-dir '$TRANSCRIPTS': exit %d, %q; want exit 2 naming the unexpanded variable", code, errs)
	}
	if names, _ := os.ReadDir(cwd); len(names) != 0 {
		t.Errorf("made in the working directory: %v", names)
	}
	// A dollar that names no variable is a name like any other.
	root := filepath.Join(t.TempDir(), "price$5")
	os.Mkdir(root, 0o700)
	if code, _, errs := runCLI(t, "dump", root); code != exitOK {
		t.Errorf("dump %s: exit %d, %s", root, code, errs)
	}
}

// A job dir given unexpanded ("$JOB_DIR", "~") was made as a directory
// of that name in the working directory, and the transcript staged
// there, where the worker's pi never looks. Refused, exit 2, as a
// sessions root is.
func TestResolveRefusesAnUnexpandedJobDir(t *testing.T) {
	clearEnv(t)
	root := copySample(t)
	cwd := t.TempDir()
	t.Chdir(cwd)
	for _, dir := range []string{"$JOB_DIR", "${JOB_DIR}", "~", "~/job"} {
		code, out, errs := runCLI(t, "resolve", "--sessions-dir", root, "--key", "4668107cac2e99b44415c5606b32ef14", "--job-dir", dir, "--pi-version", "0.58.3", "--log-format", "console")
		if code != exitUsage || out != "" || !strings.Contains(errs, "only a shell expands") {
			t.Errorf("--job-dir %q: exit %d, stdout %q, stderr %q; want exit 2 naming what a shell expands", dir, code, brief(out), errs)
		}
	}
	if names, _ := os.ReadDir(cwd); len(names) != 0 {
		t.Errorf("resolve made %v in the working directory", names)
	}
}
