package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// An env file's `PI_SESSIONS_DIR=""` (meant as "unset", and passed quotes
// and all by docker's --env-file, Kubernetes and an env dict) is a name
// two bytes long, a relative path: promote would make a dir named `""` in
// the worker's working directory and promote there, every resolve absent.
// The quotes are what refuses it, however short the name they enclose:
// exit 2, naming the variable and its quotes, nothing made.
func TestEmptyQuotesAreAConfigurationError(t *testing.T) {
	clearEnv(t)
	cwd := t.TempDir()
	t.Chdir(cwd)
	job := filepath.Join(t.TempDir(), "job")
	for _, root := range []string{`""`, `''`} {
		t.Setenv("PI_SESSIONS_DIR", root)
		for _, args := range [][]string{
			{"resolve", "--key", "4668107cac2e99b44415c5606b32ef14", "--job-dir", job, "--pi-version", "1"},
			{"promote", "--job-dir", job, "--pi-version", "1"},
			{"dump"},
		} {
			code, out, errs := runCLI(t, append(args, "--log-format", "console")...)
			if code != exitUsage || out != "" || !strings.Contains(errs, "PI_SESSIONS_DIR") || !strings.Contains(errs, "quotes") {
				t.Errorf("PI_SESSIONS_DIR=%s %s: exit %d, stdout %q, stderr %q; want exit 2 naming the variable and its quotes", root, args[0], code, brief(out), errs)
			}
		}
	}
	t.Setenv("PI_SESSIONS_DIR", "")
	code, out, errs := runCLI(t, "dump", "--etcd-endpoints", "http://127.0.0.1:1", "--transcripts-dir", `""`, "--log-format", "console")
	if code != exitUsage || out != "" || !strings.Contains(errs, "--transcripts-dir") || !strings.Contains(errs, "quotes") {
		t.Errorf(`--transcripts-dir '""': exit %d, stdout %q, stderr %q; want exit 2 naming the flag and its quotes`, code, brief(out), errs)
	}
	if names, _ := os.ReadDir(cwd); len(names) != 0 {
		t.Errorf("made in the working directory: %v", names)
	}
}

// A quote that opens a name and is never closed is no quoting of the
// whole (a shell would refuse the line; nothing removes it): the name is
// as written, a root walked and a job dir made like any other.
func TestAnUnclosedQuoteBeginningANameIsAName(t *testing.T) {
	clearEnv(t)
	root := copySample(t)
	t.Chdir(t.TempDir())
	for _, name := range []string{`'sessions`, `"sessions`, `sessions"`} {
		if err := os.Mkdir(name, 0o700); err != nil {
			t.Fatal(err)
		}
		if code, _, errs := runCLI(t, "dump", name, "--log-format", "console"); code != exitOK {
			t.Errorf("dump %s: exit %d, %s; want it walked", name, code, errs)
		}
		job := name + "-job"
		code, _, errs := runCLI(t, "resolve", "--sessions-dir", root, "--key", "4668107cac2e99b44415c5606b32ef14", "--job-dir", job, "--pi-version", "0.58.3", "--log-format", "console")
		if code != exitOK {
			t.Errorf("resolve --job-dir %s: exit %d, %s; want it made", job, code, errs)
		} else if _, err := os.Stat(filepath.Join(job, "session.ticket")); err != nil {
			t.Errorf("resolve --job-dir %s: %v", job, err)
		}
	}
}

// A variable's name begins with any letter or '_', and each of the
// letters at either end of the two ranges begins one: "$app", "$zone",
// "$App", "$Zone" are variables a shell would have expanded, refused as
// "$HOME" is.
func TestEveryLetterBeginsAVariable(t *testing.T) {
	clearEnv(t)
	t.Chdir(t.TempDir())
	for _, v := range []string{"app", "zone", "App", "Zone", "_x"} {
		root := "/var/lib/$" + v + "/sessions"
		code, out, errs := runCLI(t, "dump", root, "--log-format", "console")
		if code != exitUsage || out != "" || !strings.Contains(errs, "names a variable") {
			t.Errorf("dump %s: exit %d, stdout %q, stderr %q; want exit 2 naming the variable", root, code, brief(out), errs)
		}
	}
}

// The byte bound's default is 8 MiB (docs: 8388608): a transcript of
// exactly that many bytes is promoted, one byte more is too-large, with
// neither PI_SESSION_MAX_BYTES nor --max-bytes set.
func TestTheDefaultByteBoundIsEightMiB(t *testing.T) {
	clearEnv(t)
	root := filepath.Join(t.TempDir(), "sessions")
	const head = `{"type":"message","id":"x","parentId":null,"timestamp":"2026-11-29T09:00:00Z","message":{"role":"user","content":"`
	const tail = "\"}}\n"
	for i, c := range []struct {
		size int
		want string
	}{{8 << 20, "promoted"}, {8<<20 + 1, "too-large"}} {
		job := filepath.Join(t.TempDir(), "job")
		ref := fmt.Sprintf("pi/issue-%d", i)
		if code, _, errs := runCLI(t, "resolve", "--sessions-dir", root, "--kind", "github", "--repo", "acme/widget", "--ref", ref, "--job-dir", job, "--pi-version", "1"); code != exitOK {
			t.Fatalf("resolve: exit %d, %s", code, errs)
		}
		body := header + head + strings.Repeat("x", c.size-len(header)-len(head)-len(tail)) + tail
		if err := os.WriteFile(filepath.Join(job, "session", "current.jsonl"), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		code, out, errs := runCLI(t, "promote", "--sessions-dir", root, "--job-dir", job, "--pi-version", "1")
		var p promoteResult
		if err := json.Unmarshal([]byte(out), &p); code != exitOK || err != nil {
			t.Fatalf("promote of %d bytes: exit %d, stdout %q, stderr %q", c.size, code, out, errs)
		}
		got := p.Reason
		if p.Promoted {
			got = "promoted"
		}
		if got != c.want || p.Bytes != int64(c.size) {
			t.Errorf("promote of %d bytes with the default bound: %+v; want %s, bytes %d", c.size, p, c.want, c.size)
		}
	}
}

// An endpoint's port is 1 to 65535, both ends taken (docs/fleet.md): 65535
// is a port like any other, 0 and 65536 are none, refused before
// anything connects, exit 2 naming the endpoint.
func TestAnEndpointsPortIsOneTo65535(t *testing.T) {
	clearEnv(t)
	t.Setenv("PI_SESSIONS_TRANSCRIPTS_DIR", t.TempDir())
	for _, c := range []struct {
		port  string
		taken bool
	}{{"1", true}, {"65535", true}, {"0", false}, {"65536", false}, {"+80", false}} {
		code, out, errs := runCLI(t, "dump", "--json", "--etcd-endpoints", "http://127.0.0.1:"+c.port, "--etcd-timeout", "100ms", "--log-format", "console")
		refused := code == exitUsage && out == "" && strings.Contains(errs, "--etcd-endpoints: endpoint 1") && strings.Contains(errs, "a port from 1 to 65535")
		if refused == c.taken {
			t.Errorf("port %s: exit %d, stdout %q, stderr %q; want it taken %v", c.port, code, brief(out), errs, c.taken)
		}
	}
}

// -h asks for help wherever it stands (docs/cli.md: "-h prints the
// command's help on stdout and exits 0"), after a subcommand's first word
// too: "sessdb engage --json -h" is "sessdb help engage", as "sessdb
// engage -h" and "sessdb engage replay --json -h" are, not a usage error.
func TestHelpAfterASubcommandsFirstWordWhereverItStands(t *testing.T) {
	want := cmdEngageReplay.helpText()
	for _, args := range [][]string{{"engage", "-h"}, {"engage", "--json", "-h"}, {"engage", "x", "--help"}, {"engage", "replay", "--json", "-h"}} {
		code, out, errs := runCLI(t, args...)
		if code != exitOK || out != want || errs != "" {
			t.Errorf("sessdb %q: exit %d, stdout %q, stderr %q; want exit 0 and engage replay's help", args, code, brief(out), errs)
		}
	}
	// A command that does not exist has no help: -h does not make it one.
	code, out, errs := runCLI(t, "bogus", "x", "-h")
	if code != exitUsage || out != "" || !strings.Contains(errs, "unknown command") {
		t.Errorf("sessdb bogus x -h: exit %d, stdout %q, stderr %q; want exit 2, an unknown command", code, brief(out), errs)
	}
}

// Every word a command's flags take for help (the flag package's: -h or
// -help, one dash or two, with or without a value) asks for help in the
// command line's other places too: after a subcommand's first word, and
// after "sessdb help CMD". Before, "sessdb engage --h" and "sessdb help
// dump --h" were usage errors, exit 2, where "sessdb dump --h" was help.
func TestEveryHelpWordOfAFlagAsksForHelpEverywhere(t *testing.T) {
	for _, w := range []string{"-h", "--h", "-help", "--help", "-h=1", "--help=x"} {
		for _, c := range []struct {
			args []string
			want string
		}{
			{[]string{"dump", w}, cmdDump.helpText()},
			{[]string{"engage", w}, cmdEngageReplay.helpText()},
			{[]string{"engage", "--json", w}, cmdEngageReplay.helpText()},
			{[]string{"help", "dump", w}, cmdDump.helpText()},
		} {
			code, out, errs := runCLI(t, c.args...)
			if code != exitOK || out != c.want || errs != "" {
				t.Errorf("sessdb %q: exit %d, stdout %q, stderr %q; want exit 0 and the command's help", c.args, code, brief(out), errs)
			}
		}
	}
}

// A flag's value given as the next word is that flag's, never read as a
// word of the command line of its own: a value "--" ends no flags, and
// a flag after it given another flag for its value is still refused.
func TestAValueOfTwoDashesEndsNoFlags(t *testing.T) {
	clearEnv(t)
	root := copySample(t)
	code, out, errs := runCLI(t, "dump", "--as-job", "--venue", "--", "--pi-version", "--json", root, "--log-format", "console")
	if code != exitUsage || out != "" || !strings.Contains(errs, "--pi-version") || !strings.Contains(errs, "is a flag, not a value") {
		t.Errorf(`dump --as-job --venue -- --pi-version --json: exit %d, stdout %q, stderr %q; want exit 2 naming --pi-version's value as a flag`, code, brief(out), errs)
	}
}

// A long value is quoted by its head cut at a rune's start, never inside
// a character: the error line stays UTF-8, its head the value's first
// whole characters (21 three-byte runes of the 64 bytes quoted), then
// the value's length.
func TestAQuotedHeadEndsOnAWholeCharacter(t *testing.T) {
	clearEnv(t)
	root := copySample(t)
	v := strings.Repeat("€", 40) // 120 bytes, a rune every 3
	code, out, errs := runCLI(t, "dump", "--at", v, root, "--log-format", "console")
	if code != exitUsage || out != "" || !utf8.ValidString(errs) || !strings.Contains(errs, `"`+strings.Repeat("€", 21)+`"…(120 bytes)`) {
		t.Errorf("--at of 40 euro signs: exit %d, stdout %q, stderr %q; want exit 2 quoting the first 21 whole, then (120 bytes)", code, brief(out), errs)
	}
}

// A password file of up to 4 KiB is read (docs/fleet.md: "the password
// file 4 KiB"), 4096 bytes included; one byte more is refused as no
// password file, naming the flag.
func TestAPasswordFileOfExactly4KiBIsRead(t *testing.T) {
	clearEnv(t)
	t.Setenv("PI_SESSIONS_TRANSCRIPTS_DIR", t.TempDir())
	dir := t.TempDir()
	for _, c := range []struct {
		size int
		read bool
	}{{4096, true}, {4097, false}} {
		p := filepath.Join(dir, fmt.Sprint(c.size))
		if err := os.WriteFile(p, []byte(strings.Repeat("p", c.size-1)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		code, _, errs := runCLI(t, "dump", "--etcd-endpoints", "http://127.0.0.1:1", "--etcd-timeout", "100ms", "--etcd-user", "sessdb", "--etcd-password-file", p, "--log-format", "console")
		refused := code == exitUsage && strings.Contains(errs, "--etcd-password-file") && strings.Contains(errs, "is over")
		if refused == c.read {
			t.Errorf("a password file of %d bytes: exit %d, stderr %q; want it read %v", c.size, code, errs, c.read)
		}
	}
}
