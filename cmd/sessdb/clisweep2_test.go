package main

import (
	"bytes"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sessdb/gates"
	"sessdb/store"
)

// --log-level takes debug, info, warn or error, as its help says: zerolog's
// other levels (trace below, fatal and panic above) are a usage error
// naming the flag, exit 2, never a log that writes more or less than asked.
func TestALogLevelOutsideDebugToErrorIsAUsageError(t *testing.T) {
	clearEnv(t)
	root := copySample(t)
	for _, level := range []string{"trace", "fatal", "panic"} {
		code, out, errs := runCLI(t, "dump", "--log-level", level, root, "--log-format", "console")
		if code != exitUsage || out != "" || !strings.Contains(errs, "--log-level") {
			t.Errorf("--log-level %s: exit %d, stdout %q, stderr %q; want exit 2 naming --log-level", level, code, brief(out), errs)
		}
	}
}

// Every unprintable character a name under a root can hold is escaped, in
// a table and in JSON alike, at the ends of the ranges too: DEL (U+007F,
// which encoding/json leaves raw), U+0080 (the first C1 control), U+2029
// (the paragraph separator) and a format character beyond the BMP
// (U+E0041, a tag), which JSON writes as its surrogate pair, so that the
// line decodes back to the name.
func TestEveryUnprintableCharacterOfANameIsEscaped(t *testing.T) {
	clearEnv(t)
	root := copySample(t)
	name := "a\x7f\u0080b\u2029c\U000E0041d"
	// DEL alone in a line too: escaped when it is the line's only one.
	for _, n := range []string{name, "del\x7fonly"} {
		if err := os.Mkdir(filepath.Join(root, n), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	_, out, errs := runCLI(t, "dump", "--wide", root)
	for _, r := range []rune{0x7f, 0x80, 0x2029, 0xE0041} {
		if strings.ContainsRune(out+errs, r) {
			t.Errorf("dump --wide writes U+%04X raw:\n%s%s", r, out, errs)
		}
	}
	if !strings.Contains(out, `a\x7f\u0080b\u2029c\ue0041d`) {
		t.Errorf("dump --wide does not show the name escaped:\n%s", out)
	}
	_, out, _ = runCLI(t, "dump", "--json", root)
	found := false
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		for _, r := range []rune{0x7f, 0x80, 0x2029, 0xE0041} {
			if strings.ContainsRune(line, r) {
				t.Errorf("dump --json writes U+%04X raw: %s", r, line)
			}
		}
		var e struct{ Key string }
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("dump --json line %q: %v", line, err)
		}
		found = found || e.Key == name
	}
	if !found || !strings.Contains(out, `del\u007fonly`) || !strings.Contains(out, `\udb40\udc41`) {
		t.Errorf("dump --json: no line decodes to the name %q, or U+E0041 is not a surrogate pair:\n%s", name, out)
	}
}

// --history N prints the history table for every N from 1 (docs/cli.md:
// "print each key's last N history entries ... as a table of their own
// instead of the key table"): with N = 1, one entry of the key, under the
// history table's header.
func TestHistoryOfOneEntryIsTheHistoryTable(t *testing.T) {
	clearEnv(t)
	atSampleTime(t)
	root := copySample(t)
	key := "4668107cac2e99b44415c5606b32ef14"
	code, out, errs := runCLI(t, "dump", "--history", "1", "--key", key, root)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if code != exitOK || errs != "" || len(lines) != 2 || !strings.Contains(lines[0], "OUTCOME") || !strings.HasPrefix(lines[1], key+" ") {
		t.Errorf("dump --history 1 --key %s: exit %d, stderr %q; want the history table's header and one entry:\n%s", key, code, errs, out)
	}
}

// Which of dump's reports are a key it could not do (exit 1, named on
// stderr, docs/cli.md): a key whose meta.db could not be read, a locked
// key, and a key whose transcript --verify could not read (an I/O error,
// which no file a test can make gives, so it is judged here from the
// report); a transcript that does not match its record is a finding,
// printed, and a name that is no key is no fault.
func TestWhichDumpReportsAreFaults(t *testing.T) {
	key := "4668107cac2e99b44415c5606b32ef14"
	for _, c := range []struct {
		what  string
		r     store.KeyReport
		fault bool
	}{
		{"meta unreadable", store.KeyReport{Name: key, Problem: "meta.db: input/output error"}, true},
		{"locked", store.KeyReport{Name: key, Problem: "locked by another", Verdict: &store.VerdictReport{Reason: string(gates.Locked)}}, true},
		{"verify unreadable", store.KeyReport{Name: key, Verify: &store.VerifyReport{Result: store.VerifyUnreadable, Detail: "read current.jsonl: input/output error"}}, true},
		{"verify mismatch", store.KeyReport{Name: key, Verify: &store.VerifyReport{Result: store.VerifyMismatch, Detail: "742 bytes, the record says 743"}}, false},
		{"not a key", store.KeyReport{Name: "README.txt", Problem: "not a key"}, false},
	} {
		if why := dumpFault(c.r); (why != "") != c.fault {
			t.Errorf("%s: dumpFault = %q; want a fault %v", c.what, why, c.fault)
		}
	}
}

// A reap --dry-run whose report cannot be written (a full disk) removed
// nothing, and says nothing was removed: exit 1 with the write's error,
// never "removed KEY, but the report was not written", which a real
// reap says of the keys it did remove. The expired key is still there.
func TestADryRunReapWhoseReportFailsSaysNothingRemoved(t *testing.T) {
	clearEnv(t)
	atSampleTime(t)
	root := copySample(t)
	var errb bytes.Buffer
	code := run([]string{"reap", "--dry-run", "--log-format", "console", root}, fullWriter{}, &errb)
	errs := errb.String()
	if code != exitFault || !strings.Contains(errs, "no space left") || strings.Contains(errs, "removed") {
		t.Errorf("reap --dry-run to a full disk: exit %d, stderr %q; want exit 1 naming the write's error, no removal", code, errs)
	}
	if _, err := os.Stat(filepath.Join(root, "55c5b4543d2fe748d576d4ed795b9167")); err != nil {
		t.Errorf("the expired key after a dry run: %v", err)
	}
}

// A key migrate leaves in conflict (promoted on both sides since the last
// migration) is one it could not do: named on stderr with its cause, as a
// locked or failed key is, and migrate exits 1 after the others.
func TestAMigrationConflictIsNamedOnStderr(t *testing.T) {
	clearEnv(t)
	root := filepath.Join(t.TempDir(), "sessions")
	key := store.Key("github", "acme/widget", "pi/both")
	onRoot := func(job string) {
		dir := filepath.Join(t.TempDir(), job)
		args := []string{"--sessions-dir", root, "--pi-version", "0.58.3", "--job-dir", dir}
		if code, out, errs := runCLI(t, append([]string{"resolve", "--key", key}, args...)...); code != exitOK {
			t.Fatalf("resolve: exit %d\n%s%s", code, out, errs)
		}
		appendAnswered(t, dir, job)
		if code, out, errs := runCLI(t, append([]string{"promote"}, args...)...); code != exitOK || !strings.Contains(out, `"promoted":true`) {
			t.Fatalf("promote: exit %d\n%s%s", code, out, errs)
		}
	}
	onRoot("host-1")
	f := startFleet(t)
	migrateJSON(t, exitOK, "migrate", "--to", "etcd", "--json", root)
	f.run(t, key, "fleet-2")
	endpoints := os.Getenv("PI_SESSIONS_ETCD_ENDPOINTS")
	t.Setenv("PI_SESSIONS_ETCD_ENDPOINTS", "")
	t.Setenv("PI_SESSIONS_TRANSCRIPTS_DIR", "")
	t.Setenv("PI_SESSIONS_ETCD_PREFIX", "")
	onRoot("host-2")
	t.Setenv("PI_SESSIONS_ETCD_ENDPOINTS", endpoints)
	t.Setenv("PI_SESSIONS_TRANSCRIPTS_DIR", f.dir)
	t.Setenv("PI_SESSIONS_ETCD_PREFIX", f.prefix)
	code, out, errs := runCLI(t, "migrate", "--to", "etcd", "--log-format", "console", root)
	if code != exitFault || !strings.Contains(out, "conflict") || !strings.Contains(errs, key) || !strings.Contains(errs, "conflict") {
		t.Errorf("migrate --to etcd of a key promoted on both sides: exit %d, stderr %q; want exit 1 naming the key's conflict:\n%s", code, errs, out)
	}
	// No re-run settles a conflict, so the summary says what does, in
	// the command lines the operator types (docs/fleet.md): "fix the cause
	// and run again" alone left them re-running to the same exit 1.
	quarantine := "env -i PATH=\"$PATH\" sessdb check --repair --quarantine KEY " + root
	del := "etcdctl del --prefix " + f.prefix + "/history/KEY/; etcdctl del " + f.prefix + "/record/KEY"
	if !strings.Contains(out, quarantine) || !strings.Contains(out, del) {
		t.Errorf("migrate --to etcd's summary of a conflict does not say what settles it (want %q and %q):\n%s", quarantine, del, out)
	}
	// Following the first: the fleet's conversation stays, and the re-run
	// passes the key dir moved aside by, exit 0.
	t.Setenv("PI_SESSIONS_ETCD_ENDPOINTS", "")
	t.Setenv("PI_SESSIONS_TRANSCRIPTS_DIR", "")
	t.Setenv("PI_SESSIONS_ETCD_PREFIX", "")
	if code, out, errs := runCLI(t, "check", "--repair", "--quarantine", key, root); code != exitOK {
		t.Fatalf("check --repair --quarantine %s: exit %d\n%s%s", key, code, out, errs)
	}
	t.Setenv("PI_SESSIONS_ETCD_ENDPOINTS", endpoints)
	t.Setenv("PI_SESSIONS_TRANSCRIPTS_DIR", f.dir)
	t.Setenv("PI_SESSIONS_ETCD_PREFIX", f.prefix)
	if code, out, errs := runCLI(t, "migrate", "--to", "etcd", root); code != exitOK || strings.Contains(out, "conflict") {
		t.Errorf("migrate --to etcd after the key dir in conflict was moved aside: exit %d, stderr %q; want exit 0, no conflict:\n%s", code, errs, out)
	}
}

// A refused promotion's bytes are the staged file's size, and null when
// there is no regular file there (docs/json.md): a directory or a FIFO at
// the staged name has no size a job wrote.
func TestARefusalOfAStagedNameThatIsNoFileHasNullBytes(t *testing.T) {
	clearEnv(t)
	root := filepath.Join(t.TempDir(), "sessions")
	job := filepath.Join(t.TempDir(), "job")
	args := []string{"--sessions-dir", root, "--pi-version", "0.58.3", "--job-dir", job}
	if code, out, errs := runCLI(t, append([]string{"resolve", "--key", "4668107cac2e99b44415c5606b32ef14"}, args...)...); code != exitOK {
		t.Fatalf("resolve: exit %d\n%s%s", code, out, errs)
	}
	staged := filepath.Join(job, store.StagedDirName, store.TranscriptName)
	if err := os.Remove(staged); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(staged, 0o700); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, append([]string{"promote"}, args...)...)
	if code != exitOK || !strings.Contains(out, `"promoted":false`) || !strings.Contains(out, `"bytes":null`) {
		t.Errorf("promote of a directory at the staged name: exit %d, stderr %q; want exit 0, a refusal with bytes null:\n%s", code, errs, out)
	}
}

// An endpoint written with a trailing slash, as a URL is often copied,
// is the same endpoint: taken (etcd then unreachable here), never refused
// as not http://host:port; a path beyond it is refused.
func TestAnEndpointWithATrailingSlashIsTaken(t *testing.T) {
	clearEnv(t)
	t.Setenv("PI_SESSIONS_TRANSCRIPTS_DIR", t.TempDir())
	for _, c := range []struct {
		ep    string
		taken bool
	}{{"http://127.0.0.1:1/", true}, {"http://127.0.0.1:1/v3", false}} {
		code, out, errs := runCLI(t, "dump", "--json", "--etcd-endpoints", c.ep, "--etcd-timeout", "100ms", "--log-format", "console")
		refused := code == exitUsage && out == "" && strings.Contains(errs, "is not http://host:port")
		if refused == c.taken {
			t.Errorf("--etcd-endpoints %s: exit %d, stdout %q, stderr %q; want it taken %v", c.ep, code, brief(out), errs, c.taken)
		}
	}
}

// With --log-format json a walk shows no progress line on stderr, even
// where it would show one (a terminal, here forced): every stderr line is
// JSON, and a progress line's carriage returns are none.
func TestNoProgressLineAmongJSONLogLines(t *testing.T) {
	clearEnv(t)
	atSampleTime(t)
	root := copySample(t)
	forceProgress = true
	t.Cleanup(func() { forceProgress = false })
	for _, args := range [][]string{{"dump", root}, {"check", root}, {"reap", "--dry-run", root}, {"stats", root}} {
		code, _, errs := runCLI(t, append(args, "--log-format", "json")...)
		if code != exitOK || strings.Contains(errs, "\r") {
			t.Errorf("%s --log-format json: exit %d, stderr %q; want exit 0, no progress line", args[0], code, errs)
		}
		everyLineJSON(t, args[0], errs)
	}
}

// A usage error of sessdb itself or of help points at the command list,
// 'sessdb help', never at 'sessdb help help'.
func TestAUsageErrorOfHelpPointsAtTheList(t *testing.T) {
	for _, args := range [][]string{{"help", "bogus"}, {"bogus"}} {
		code, out, errs := runCLI(t, args...)
		if code != exitUsage || out != "" || !strings.HasSuffix(errs, "(run 'sessdb help')\n") {
			t.Errorf("sessdb %q: exit %d, stdout %q, stderr %q; want exit 2 ending (run 'sessdb help')", args, code, brief(out), errs)
		}
	}
}

// A sessions root that migrate --from etcd is to make (it does not exist
// yet) is still told from a fleet path that names it: "--etcd-prefix $P
// /srv/new/" with P empty took the DIR for the prefix, and the root
// PI_SESSIONS_DIR names, spelt without the slash, is the same directory.
func TestAFleetPathNamingARootNotYetMadeIsRefused(t *testing.T) {
	clearEnv(t)
	root := filepath.Join(t.TempDir(), "new")
	t.Setenv("PI_SESSIONS_DIR", root)
	code, out, errs := runCLI(t, "migrate", "--from", "etcd", "--etcd-endpoints", "http://127.0.0.1:1", "--etcd-timeout", "100ms", "--transcripts-dir", t.TempDir(), "--etcd-prefix", root+"/", "--log-format", "console")
	if code != exitUsage || out != "" || !strings.Contains(errs, "--etcd-prefix") || !strings.Contains(errs, "is the sessions root") {
		t.Errorf("migrate --from etcd --etcd-prefix %s/: exit %d, stdout %q, stderr %q; want exit 2 naming --etcd-prefix as the sessions root", root, code, brief(out), errs)
	}
	if _, err := os.Lstat(root); err == nil {
		t.Errorf("the root %s was made", root)
	}
}

// The login an etcd user makes is bounded by --etcd-timeout, as every
// request is, not by etcd's default dial timeout (5 s): against a member
// that accepts the connection and never answers, a resolve is a cold
// start, store-unavailable, well before 5 s.
func TestALoginIsBoundedByTheRequestTimeout(t *testing.T) {
	clearEnv(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() }) // held open, never answered
		}
	}()
	t.Setenv("PI_SESSIONS_ETCD_PASSWORD", "secret")
	start := time.Now()
	code, out, errs := runCLI(t, "resolve", "--etcd-endpoints", "http://"+ln.Addr().String(), "--transcripts-dir", t.TempDir(),
		"--etcd-user", "sessdb", "--etcd-timeout", "200ms", "--key", "4668107cac2e99b44415c5606b32ef14",
		"--job-dir", filepath.Join(t.TempDir(), "job"), "--pi-version", "1", "--log-format", "console")
	took := time.Since(start)
	if code != exitOK || !strings.Contains(out, `"reason":"store-unavailable"`) || took > 3*time.Second {
		t.Errorf("resolve against a silent member with --etcd-timeout 200ms: exit %d after %v, stdout %q, stderr %q; want store-unavailable in well under 5s", code, took, out, errs)
	}
}

// A misspelt variable as near to two that sessdb reads, by words and by
// letters alike, is pointed at the first of them in order, the same one
// on every run: PI_SESSIONS_ETCD_AE is two edits from both
// PI_SESSIONS_ETCD_CA and PI_SESSIONS_ETCD_KEY.
func TestAnUnknownVariableEquallyNearTwoNamesTheFirst(t *testing.T) {
	clearEnv(t)
	root := copySample(t)
	t.Setenv("PI_SESSIONS_ETCD_AE", "x")
	code, _, errs := runCLI(t, "dump", root, "--log-format", "console")
	if code != exitOK || !strings.Contains(errs, "PI_SESSIONS_ETCD_AE is not a variable sessdb reads, and is ignored; did you mean PI_SESSIONS_ETCD_CA?") {
		t.Errorf("PI_SESSIONS_ETCD_AE set: exit %d, stderr %q; want a warning pointing at PI_SESSIONS_ETCD_CA", code, errs)
	}
}

// resolve without --job-dir is a usage error, exit 2, and stages nothing:
// no job dir is the working directory.
func TestResolveWithoutAJobDirIsAUsageError(t *testing.T) {
	clearEnv(t)
	root := copySample(t)
	cwd := t.TempDir()
	t.Chdir(cwd)
	code, out, errs := runCLI(t, "resolve", "--sessions-dir", root, "--key", "4668107cac2e99b44415c5606b32ef14", "--pi-version", "0.58.3", "--log-format", "console")
	if code != exitUsage || out != "" || !strings.Contains(errs, "--job-dir is required") {
		t.Errorf("resolve without --job-dir: exit %d, stdout %q, stderr %q; want exit 2, --job-dir is required", code, brief(out), errs)
	}
	if names, _ := os.ReadDir(cwd); len(names) != 0 {
		t.Errorf("made in the working directory: %v", names)
	}
}

// reap removes keys by the time it is: --at without --dry-run is a usage
// error, exit 2, and no key is removed, not even one expired at that time.
func TestReapAtATimeRemovesNothing(t *testing.T) {
	clearEnv(t)
	atSampleTime(t)
	root := copySample(t)
	before := fingerprint(t, root)
	code, out, errs := runCLI(t, "reap", "--at", "2030-01-01T00:00:00Z", root, "--log-format", "console")
	if code != exitUsage || out != "" || !strings.Contains(errs, "--at goes with --dry-run") {
		t.Errorf("reap --at without --dry-run: exit %d, stdout %q, stderr %q; want exit 2", code, brief(out), errs)
	}
	if fingerprint(t, root) != before {
		t.Errorf("reap --at without --dry-run changed the root")
	}
}

// "--" ends the flags (docs/cli.md): every word after it is an argument,
// one that looks like a flag included, so "dump -- DIR --json" is two
// arguments, a usage error, not a JSON dump of DIR.
func TestEveryWordAfterTwoDashesIsAnArgument(t *testing.T) {
	clearEnv(t)
	root := copySample(t)
	code, out, errs := runCLI(t, "dump", "--", root, "--json", "--log-format", "console")
	if code != exitUsage || out != "" || !strings.Contains(errs, `unexpected argument "--json"`) {
		t.Errorf("dump -- DIR --json: exit %d, stdout %q, stderr %q; want exit 2, --json an unexpected argument", code, brief(out), errs)
	}
}

// "sessdb --help", like "sessdb help" and "sessdb -h", prints the command
// list on stdout and exits 0.
func TestDashDashHelpIsTheCommandList(t *testing.T) {
	want := commandList()
	for _, args := range [][]string{{"--help"}, {"-help"}, {"-h"}, {"help"}} {
		code, out, errs := runCLI(t, args...)
		if code != exitOK || out != want || errs != "" {
			t.Errorf("sessdb %q: exit %d, stdout %q, stderr %q; want exit 0 and the command list", args, code, brief(out), errs)
		}
	}
}
