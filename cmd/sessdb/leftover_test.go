package main

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// stagedJob resolves key on root into a fresh job dir and appends one
// message to the staged transcript, as pi would: a job promote takes.
func stagedJob(t *testing.T, root, key string) string {
	t.Helper()
	job := filepath.Join(t.TempDir(), "job")
	if code, out, errs := runCLI(t, "resolve", "--sessions-dir", root, "--key", key, "--job-dir", job, "--pi-version", "0.58.3"); code != exitOK {
		t.Fatalf("resolve: exit %d, %s%s", code, out, errs)
	}
	f, err := os.OpenFile(filepath.Join(job, "session", "current.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(`{"type":"message","id":"x","parentId":null,"timestamp":"2026-11-29T09:00:00Z","message":{"role":"user","content":"hi"}}` + "\n"); err != nil {
		t.Fatal(err)
	}
	return job
}

// `promote --pi-version $V -h` with V empty took "-h" for the pi version:
// the flag package owns -h and --help, so no flag of the command is named
// so and flagForAValue let it through, and promote stamped the key "-h"
// (every later job pi-version-changed) where the operator asked for help.
// -h, -help and --help after a flag that wants a value are refused as any
// other flag is, exit 2, nothing written; --pi-version=-h still gives it.
func TestHelpIsNotTakenForAFlagsValue(t *testing.T) {
	clearEnv(t)
	root := copySample(t)
	key := "9ddb56ddcfac930962d0f4d375d2fd07"
	job := stagedJob(t, root, key)
	for _, args := range [][]string{
		{"promote", "--sessions-dir", root, "--job-dir", job, "--pi-version", "-h"},
		{"promote", "--sessions-dir", root, "--job-dir", job, "--pi-version", "--help"},
		{"dump", "--key", key, "--as-job", "--venue", "local", "--pi-version", "-help", root},
		{"dump", "--key", key, "--as-job", "--pi-version", "0.58.3", "--venue", "--h", root},
	} {
		code, out, errs := runCLI(t, append(args, "--log-format", "console")...)
		if code != exitUsage || out != "" || !strings.Contains(errs, "is a flag") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 saying the value is a flag", args, code, brief(out), errs)
		}
	}
	if code, out, errs := runCLI(t, "dump", "--json", "--key", key, root); code != exitOK || !strings.Contains(out, `"pi_version":"0.58.3"`) || !strings.Contains(out, `"gen":2,`) {
		t.Errorf("after the refused promotes the key is not as it was: exit %d, %s%s", code, brief(out), errs)
	}
	// -h where a flag is wanted is still help.
	if code, out, _ := runCLI(t, "promote", "--job-dir", job, "-h"); code != exitOK || !strings.Contains(out, "usage: sessdb promote") {
		t.Errorf("promote --job-dir J -h: exit %d, %q; want the help", code, brief(out))
	}
	code, out, errs := runCLI(t, "promote", "--sessions-dir", root, "--job-dir", job, "--pi-version=-h")
	if code != exitOK || !strings.Contains(out, `"promoted":true`) {
		t.Errorf("--pi-version=-h: exit %d, %s%s; want it promoted with that pi version", code, out, errs)
	}
}

// A command substitution written with backticks ("`pwd`/sessions", as
// an env file or a unit's Environment= passes it) is what only a shell
// expands, as "$(pwd)" is: taken as a relative path, it was a sessions
// root or a job dir made in the worker's working directory. A name that
// holds two backticks is refused as one naming a variable is, exit 2,
// nothing made; one backtick alone, which no shell expands, is a name.
func TestABacktickSubstitutionIsAConfigurationError(t *testing.T) {
	clearEnv(t)
	sample := copySample(t)
	cwd := t.TempDir()
	t.Chdir(cwd)
	key := "4668107cac2e99b44415c5606b32ef14"
	job := filepath.Join(t.TempDir(), "job")
	t.Setenv("PI_SESSIONS_DIR", "`pwd`/sessions")
	code, out, errs := runCLI(t, "resolve", "--key", key, "--job-dir", job, "--pi-version", "1", "--log-format", "console")
	if code == exitOK {
		// The code as it was: a cold start. Run the job, promote it.
		f, err := os.OpenFile(filepath.Join(job, "session", "current.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(header + `{"type":"message","id":"x","parentId":null,"timestamp":"2026-11-29T09:00:00Z","message":{"role":"user","content":"hi"}}` + "\n")
		f.Close()
	}
	if code != exitUsage || out != "" || !strings.Contains(errs, "PI_SESSIONS_DIR") || !strings.Contains(errs, "shell") {
		t.Errorf("PI_SESSIONS_DIR=`pwd`/sessions resolve: exit %d, stdout %q, stderr %q; want exit 2 naming it and what only a shell expands", code, out, errs)
	}
	code, out, errs = runCLI(t, "promote", "--job-dir", job, "--pi-version", "1", "--log-format", "console")
	if code != exitUsage || out != "" || !strings.Contains(errs, "shell") {
		t.Errorf("PI_SESSIONS_DIR=`pwd`/sessions promote: exit %d, stdout %q, stderr %q; want exit 2 naming what only a shell expands", code, out, errs)
	}
	t.Setenv("PI_SESSIONS_DIR", "")
	for _, args := range [][]string{
		{"dump", "`pwd`/sessions"},
		{"dump", "--etcd-endpoints", "http://127.0.0.1:1", "--transcripts-dir", "/srv/`hostname`"},
		{"resolve", "--sessions-dir", sample, "--key", key, "--job-dir", "``job", "--pi-version", "1"},
	} {
		code, out, errs := runCLI(t, append(args, "--log-format", "console")...)
		if code != exitUsage || out != "" || !strings.Contains(errs, "shell") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 naming what only a shell expands", args, code, brief(out), errs)
		}
	}
	var made []string
	filepath.WalkDir(cwd, func(p string, d os.DirEntry, err error) error {
		if p != cwd {
			made = append(made, strings.TrimPrefix(p, cwd))
		}
		return nil
	})
	if len(made) != 0 {
		t.Errorf("made in the working directory: %v", made)
	}
	// One backtick is no substitution: a name, walked and made.
	dir := filepath.Join(t.TempDir(), "a`b", "sessions")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := runCLI(t, "dump", dir); code != exitOK {
		t.Errorf("dump %s: exit %d, %s; want it walked", dir, code, errs)
	}
	one := filepath.Join(t.TempDir(), "job`")
	if code, _, errs := runCLI(t, "resolve", "--sessions-dir", sample, "--key", key, "--job-dir", one, "--pi-version", "0.58.3"); code != exitOK {
		t.Errorf("resolve --job-dir %s: exit %d, %s; want it made", one, code, errs)
	}
}

// The etcd user comes from the same env files and pod specs as the
// prefix: PI_SESSIONS_ETCD_USER='$ETCD_USER' (or "${U}", "$(U)", a
// backtick pair) was taken as the user's name, and etcd refused the
// login at the first request, every resolve a fault and every promote
// promote-failed, the cause far from the variable. It is a configuration
// error naming the variable, exit 2, as the prefix's is; a user name
// with a "$" that names no variable, or a "~", is a name.
func TestAnUnexpandedEtcdUserIsAConfigurationError(t *testing.T) {
	dir := t.TempDir()
	connect := func(user string) (string, error) {
		env := map[string]string{"PI_SESSIONS_ETCD_ENDPOINTS": "http://127.0.0.1:2379", "PI_SESSIONS_TRANSCRIPTS_DIR": dir, "PI_SESSIONS_ETCD_USER": user, "PI_SESSIONS_ETCD_PASSWORD": "secret"}
		fc, _, err := bindFleet(flag.NewFlagSet("t", flag.ContinueOnError)).connection(func(name string) string { return env[name] })
		return fc.Username, err
	}
	for _, u := range []string{"$U", "${ETCD_USER}", "$(ETCD_USER)", "sessdb-$HOST", "`whoami`"} {
		got, err := connect(u)
		if err == nil || !strings.Contains(err.Error(), "PI_SESSIONS_ETCD_USER") || !strings.Contains(err.Error(), "shell") || strings.Contains(err.Error(), "secret") {
			t.Errorf("PI_SESSIONS_ETCD_USER=%q: user %q, error %v; want a configuration error naming the variable and what only a shell expands", u, got, err)
		}
	}
	for _, u := range []string{"sessdb", "root", "ops$", "a$1", "~ops", "a~b", "it`s"} {
		if got, err := connect(u); err != nil || got != u {
			t.Errorf("PI_SESSIONS_ETCD_USER=%q: user %q, error %v; want it taken", u, got, err)
		}
	}
	// Through the CLI: exit 2 before any connection, the flag named.
	clearEnv(t)
	t.Setenv("PI_SESSIONS_ETCD_PASSWORD", "secret")
	code, out, errs := runCLI(t, "dump", "--etcd-endpoints", "http://127.0.0.1:1", "--transcripts-dir", dir, "--etcd-user", "$U", "--log-format", "console")
	if code != exitUsage || out != "" || !strings.Contains(errs, "--etcd-user") || !strings.Contains(errs, "shell") {
		t.Errorf("--etcd-user '$U': exit %d, stdout %q, stderr %q; want exit 2 naming --etcd-user", code, brief(out), errs)
	}
}

// Go's time.Sub holds at most 292 years and clamps what is longer: dump
// --at 9999-12-31T00:00:00Z printed every key promoted "106751d ago", and
// a transcript whose header is dated in year 1 was as old, at any time.
// An age past what a duration holds is counted in whole days all the
// same: 2026-11-29T08:00Z is 2,912,109 days before 9999-12-31 (Python's
// datetime), a header of 0001-01-01 739,948 days before 2026-11-29T10:00Z.
func TestAnAgePastADurationIsCountedInDays(t *testing.T) {
	clearEnv(t)
	root := copySample(t)
	code, out, errs := runCLI(t, "dump", "--wide", "--key", "4668107cac2e99b44415c5606b32ef14", "--at", "9999-12-31T00:00:00Z", root)
	if code != exitOK || !strings.Contains(out, " 2912109d ago ") || !strings.Contains(out, " 2912149d ago ") {
		t.Errorf("dump --wide --at 9999-12-31: exit %d, %q%s; want promoted 2912109d ago, the conversation 2912149d", code, out, errs)
	}
	legacy := filepath.Join(root, "efc1ddda39889994198ccddd21905257", "current.jsonl")
	b, err := os.ReadFile(legacy)
	if err != nil {
		t.Fatal(err)
	}
	b = []byte(strings.Replace(string(b), `"timestamp":"2026-10-20T09:00:00.000Z"`, `"timestamp":"0001-01-01T00:00:00.000Z"`, 1))
	if err := os.WriteFile(legacy, b, 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs = runCLI(t, "dump", "--wide", "--key", "efc1ddda39889994198ccddd21905257", "--at", "2026-11-29T10:00:00Z", root)
	if code != exitOK || !strings.Contains(out, " 739948d ago ") {
		t.Errorf("dump --wide of a header dated 0001-01-01: exit %d, %q%s; want its age 739948d", code, out, errs)
	}
	// An age of seven digits, as long as any there is (year 1 to 9999 is
	// 3652058 days), fits PROMOTED's column, "(mtime)" and all. (The file
	// system keeps what it can of year 1: ext4 keeps 1901-12-13.)
	mtime := time.Date(1, 1, 1, 0, 0, 1, 0, time.UTC) // the zero time would leave it unchanged
	if err := os.Chtimes(legacy, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	code, out, errs = runCLI(t, "dump", "--key", "efc1ddda39889994198ccddd21905257", "--at", "9999-12-31T23:59:59Z", root)
	if code != exitOK || !regexp.MustCompile(` [0-9]{7}d ago \(mtime\) `).MatchString(out) {
		t.Errorf("dump of a legacy key whose mtime is year 1, --at 9999-12-31: exit %d, %q%s; want seven digits' days ago (mtime), whole", code, out, errs)
	}
}

// `resolve --venue ""` (a worker that could not tell its backend, or
// "$VENUE" with VENUE unset) is the library's and the legacy store's
// unknown venue, as `--pi-version ""` is no version: the job never
// resumes (venue-changed, whatever the stamp), and its promotion stamps
// "(pending)", which matches no venue, so the next job on any venue
// cold-starts once more before its own promotion stamps its venue. It is
// meaningful, not refused (a worker whose venue is unknown runs cold, as
// the legacy store's did), and each flag's help says so: an empty stamp
// given is either refused or means something the operator can read.
func TestAnEmptyVenueIsNoVenue(t *testing.T) {
	clearEnv(t)
	for _, name := range []string{"resolve", "dump"} {
		c, _, err := find([]string{name})
		if err != nil {
			t.Fatal(err)
		}
		fs := c.newFlags()
		c.bind(fs)
		if _, usage := flag.UnquoteUsage(fs.Lookup("venue")); !strings.Contains(usage, `""`) || !strings.Contains(usage, "never resumes") {
			t.Errorf("sessdb %s --venue's help %q does not say what an empty venue means", name, usage)
		}
	}
	atSampleTime(t)
	root := copySample(t)
	key := "4668107cac2e99b44415c5606b32ef14" // resumes for pi 0.58.3 on local
	// job resolves key for venue, runs (appends a message, a header
	// first on a cold start) and promotes; it returns resolve's line.
	job := func(venue string) string {
		t.Helper()
		dir := filepath.Join(t.TempDir(), "job")
		code, out, errs := runCLI(t, "resolve", "--sessions-dir", root, "--key", key, "--job-dir", dir, "--pi-version", "0.58.3", "--venue", venue)
		if code != exitOK {
			t.Fatalf("resolve --venue %q: exit %d, %s%s", venue, code, out, errs)
		}
		staged := filepath.Join(dir, "session", "current.jsonl")
		f, err := os.OpenFile(staged, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		if st, _ := f.Stat(); st.Size() == 0 {
			f.WriteString(header)
		}
		f.WriteString(`{"type":"message","id":"x","parentId":null,"timestamp":"2026-11-29T09:00:00Z","message":{"role":"user","content":"hi"}}` + "\n")
		f.Close()
		if code, pout, errs := runCLI(t, "promote", "--sessions-dir", root, "--job-dir", dir, "--pi-version", "0.58.3"); code != exitOK || !strings.Contains(pout, `"promoted":true`) {
			t.Fatalf("promote after resolve --venue %q: exit %d, %s%s", venue, code, pout, errs)
		}
		return out
	}
	if out := job(""); !strings.Contains(out, `"resume":false,"reason":"venue-changed"`) {
		t.Errorf("resolve --venue \"\": %s; want a cold start, venue-changed", out)
	}
	if code, out, errs := runCLI(t, "dump", "--json", "--key", key, root); code != exitOK || !strings.Contains(out, `"venue":"(pending)"`) {
		t.Errorf("dump after the promotion of a job with no venue: exit %d, %s%s; want the venue stamp (pending)", code, brief(out), errs)
	}
	if code, out, errs := runCLI(t, "dump", "--json", "--key", key, "--as-job", "--pi-version", "0.58.3", "--venue", "", root); code != exitOK || !strings.Contains(out, `"verdict":{"reason":"venue-changed"`) {
		t.Errorf("dump --as-job --venue \"\": exit %d, %s%s; want venue-changed", code, brief(out), errs)
	}
	if out := job("local"); !strings.Contains(out, `"resume":false,"reason":"venue-changed"`) {
		t.Errorf("the first job on local after it: %s; want a cold start, venue-changed", out)
	}
	if out := job("local"); !strings.Contains(out, `"resume":true,"reason":"resumed"`) {
		t.Errorf("the second job on local: %s; want it resumed", out)
	}
}

// `dump --as-job --venue local --pi-version $V DIR`, V empty and
// unquoted: the shell drops the word, the flag takes DIR for its value,
// and dump judged PI_SESSIONS_DIR's root (another root than DIR) for the
// pi version "/srv/sessions", exit 0. Of the commands that take a DIR,
// only dump's stamps (--pi-version, --venue, --model) take any text; the
// other flags' values are numbers, durations, times, keys or words that a
// path is not, and are refused already. With no DIR argument, a stamp
// given as a word of its own that is written as a path (beginning with
// "/", "./" or "../", or "." or ".."; for a pi version, any "/", which no
// npm version holds) is a usage error naming the flag and DIR, exit 2,
// nothing on stdout. No real value is refused: a venue or a model (the
// legacy identity begins with [a-z0-9]) never begins so, --flag=VALUE
// gives one on purpose, and a DIR argument given shows nothing was taken.
func TestADirIsNotTakenForAStampsValue(t *testing.T) {
	atSampleTime(t)
	configured := copySample(t)
	t.Setenv("PI_SESSIONS_DIR", configured)
	dir := copySample(t)
	before := fingerprint(t, configured)
	t.Chdir(dir)
	for _, c := range []struct {
		flag string
		args []string
	}{
		{"--pi-version", []string{"dump", "--as-job", "--venue", "local", "--pi-version", dir}},
		{"--pi-version", []string{"dump", "--json", "--as-job", "--venue", "local", "--pi-version", filepath.Join("..", filepath.Base(dir))}},
		{"--pi-version", []string{"dump", "--as-job", "--venue", "local", "--pi-version", "."}},
		{"--pi-version", []string{"dump", "--as-job", "--venue", "local", "--pi-version", "data/sessions"}},
		{"--venue", []string{"dump", "--as-job", "--pi-version", "0.58.3", "--venue", dir, "--json"}},
		{"--venue", []string{"dump", "--as-job", "--pi-version", "0.58.3", "--venue", "./"}},
		{"--venue", []string{"dump", "--as-job", "--pi-version", "0.58.3", "--venue", ".."}},
		{"--model", []string{"dump", "--as-job", "--pi-version", "0.58.3", "--venue", "local", "--model", dir}},
	} {
		code, out, errs := runCLI(t, append(c.args, "--log-format", "console")...)
		if code != exitUsage || out != "" || !strings.Contains(errs, c.flag) || !strings.Contains(errs, "DIR") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 naming %s and DIR, nothing on stdout", c.args, code, brief(out), errs, c.flag)
		}
	}
	if after := fingerprint(t, configured); after != before {
		t.Errorf("the configured root changed")
	}
	// What a stamp really is, with no DIR; a path given with "=", or
	// with a DIR argument beside it: each taken, exit 0.
	for _, args := range [][]string{
		{"dump", "--as-job", "--venue", "edge-1", "--pi-version", "v0.58.3-rc.1+build.5", "--model", "anthropic/claude-sonnet-4-5"},
		{"dump", "--as-job", "--venue", "k8s/prod", "--pi-version", "0.58.3", "--model", "openrouter/meta/llama-3"},
		{"dump", "--as-job", "--venue", "local", "--pi-version=" + dir},
		{"dump", "--as-job", "--venue", "local", "--pi-version", "/opt/pi", dir},
		{"dump", dir, "--as-job", "--venue", "local", "--pi-version", "."},
	} {
		if code, out, errs := runCLI(t, append(args, "--log-format", "console")...); code != exitOK || out == "" {
			t.Errorf("%q: exit %d, %s; want it judged, exit 0", args, code, errs)
		}
	}
	// resolve takes no DIR: nothing can have been taken for a stamp.
	job := filepath.Join(t.TempDir(), "job")
	if code, out, errs := runCLI(t, "resolve", "--key", "4668107cac2e99b44415c5606b32ef14", "--job-dir", job, "--pi-version", "custom/0.58.3", "--venue", "./edge"); code != exitOK || !strings.Contains(out, `"reason":"venue-changed"`) {
		t.Errorf("resolve --pi-version custom/0.58.3 --venue ./edge: exit %d, %s%s; want a cold start, the stamps taken", code, out, errs)
	}
}
