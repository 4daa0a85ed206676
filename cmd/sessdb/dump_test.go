package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/internal/sample"
	"sessdb/store"
)

// fingerprint is every entry under dir with its type, mode, size, mtime
// and ctime to the nanosecond, the content's SHA-256 and a link's target:
// a command that creates, removes, renames, writes, chmods or touches
// anything changes it. (ctime moves on any metadata change, so even a
// write that restored the old mtime shows.)
func fingerprint(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %o %d %d.%09d %d.%09d", p, st.Mode, st.Size, st.Mtim.Sec, st.Mtim.Nsec, st.Ctim.Sec, st.Ctim.Nsec)
		switch {
		case d.Type().IsRegular():
			c, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, " %x", sha256.Sum256(c))
		case d.Type()&fs.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			fmt.Fprintf(&b, " -> %s", l)
		}
		b.WriteByte('\n')
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// cancelledContext stands in for a Ctrl-C that came before the walk.
func cancelledContext() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx, cancel
}

// dump (every form, --verify included) and check without --repair change
// nothing: not on the shipped sample, not on a damaged copy.
func TestDumpAndCheckAreReadOnly(t *testing.T) {
	atSampleTime(t)
	damaged := copySample(t)
	damageSample(t, damaged)
	for _, root := range []string{filepath.Join("..", "..", "testdata", "sessions"), damaged} {
		before := fingerprint(t, root)
		for _, args := range [][]string{
			{"dump"}, {"dump", "--json"}, {"dump", "--verify"}, {"dump", "--json", "--verify", "--history", "64"},
			{"dump", "--verify", "--as-job", "--pi-version", "0.58.3", "--venue", "local", "--model", "anthropic/claude-sonnet-4-5", "--max-context-pct", "50"},
			{"dump", "--key", sample.Resumable, "--verify"},
			{"check"}, {"check", "--json"},
			{"reap", "--dry-run", "--ttl-days", "1"},
		} {
			code, out, errs := runCLI(t, append(args, root)...)
			// reap exits 1 on the damaged copy: it cannot tell whether the
			// key with the emptied meta.db expired (issue 12: a key a
			// command could not do is a fault).
			if code != exitOK && code != exitIssues && !(args[0] == "reap" && code == exitFault) || out == "" {
				t.Fatalf("%v: exit %d\n%s%s", args, code, out, errs)
			}
			if after := fingerprint(t, root); after != before {
				t.Fatalf("%v changed %s:\nbefore:\n%s\nafter:\n%s", args, root, before, after)
			}
		}
	}
}

func TestDumpKeyAndJob(t *testing.T) {
	atSampleTime(t)
	root := copySample(t)
	job := []string{"--as-job", "--pi-version", "0.58.3", "--venue", "podman", "--json"}
	code, out, errs := runCLI(t, append([]string{"dump", "--key", sample.Mixed}, append(job, root)...)...)
	var r store.KeyReport
	first, _, _ := strings.Cut(out, "\n")
	if code != exitOK || json.Unmarshal([]byte(first), &r) != nil || r.Name != sample.Mixed || r.Verdict.Reason != "resumed" {
		t.Fatalf("exit %d %s %s", code, out, errs)
	}
	// One entry, then the summary that ends every JSON stream (issue 12).
	if strings.Count(out, "\n") != 2 || !strings.Contains(out, `{"summary":{"entries":1,`) {
		t.Fatalf("--key printed more than one entry:\n%s", out)
	}
	// A key with no dir is reported, not an error: its verdict is absent.
	missing := store.Key("github", "acme/widget", "never-ran")
	code, out, _ = runCLI(t, "dump", "--json", "--key", missing, root)
	first, _, _ = strings.Cut(out, "\n")
	if code != exitOK || json.Unmarshal([]byte(first), &r) != nil || r.Verdict.Reason != "absent" {
		t.Fatalf("missing key: exit %d %s", code, out)
	}
}

func TestDumpUsage(t *testing.T) {
	clearEnv(t)
	root := t.TempDir()
	for _, args := range [][]string{
		{"dump", "--key", "NOTAKEY", root},
		{"dump", "--venue", "local", root},
		{"dump", "--model", "x", root},
		{"dump", "--as-job", "--venue", "local", root},
		{"dump", "--as-job", "--pi-version", "1", root},
		{"dump", root, "extra"},
		{"dump", "--history", "65", root},
		{"reap", "--ttl-days", "1.5", root},
		{"check", "--deep-check-timeout", "0s", root},
	} {
		if code, out, errs := runCLI(t, args...); code != exitUsage || out != "" || errs == "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2", args, code, out, errs)
		}
	}
	// -h prints the help on stdout (issue 12: it went to stderr).
	for _, c := range []string{"dump", "check", "reap"} {
		code, out, errs := runCLI(t, c, "-h")
		if code != exitOK || errs != "" || !strings.Contains(out, "example:\n  sessdb "+c) || !strings.Contains(out, "exit status:") {
			t.Errorf("%s -h: exit %d\n%s%s", c, code, out, errs)
		}
	}
	if code, out, _ := runCLI(t, "help"); code != exitOK || !strings.Contains(out, "check") || !strings.Contains(out, "reap") {
		t.Errorf("help does not list check and reap:\n%s", out)
	}
}

// Progress goes to stderr, only on a terminal, and never into stdout; an
// interrupt stops the walk with what was done and exit 130.
func TestDumpProgressAndInterrupt(t *testing.T) {
	atSampleTime(t)
	root := copySample(t)
	forceProgress = true
	defer func() { forceProgress = false }()
	code, out, errs := runCLI(t, "dump", "--json", "--history", "0", root)
	if code != exitOK || !strings.Contains(errs, "\rdump 6/6") || strings.Contains(out, "\r") {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	forceProgress = false
	if _, _, errs := runCLI(t, "dump", root); errs != "" {
		t.Fatalf("progress without a terminal: %q", errs)
	}

	prev := interruptContext
	defer func() { interruptContext = prev }()
	interruptContext = cancelledContext
	code, out, errs = runCLI(t, "dump", root)
	if code != exitInterrupted || !strings.HasPrefix(out, "KEY") || !strings.Contains(errs, "interrupted after 0 entries") {
		t.Fatalf("interrupted dump: exit %d\n%s%s", code, out, errs)
	}
	// The table is marked interrupted on stdout too, as check's, reap's,
	// migrate's and stats' are: stdout alone must not pass for the root.
	for _, args := range [][]string{{"dump", root}, {"dump", "--history", "3", root}, {"dump", "--wide", root}} {
		code, out, _ = runCLI(t, args...)
		if lines := strings.Split(strings.TrimSpace(out), "\n"); code != exitInterrupted || lines[len(lines)-1] != "(interrupted after 0 entries; the table covers those)" {
			t.Errorf("%q interrupted: exit %d; want its table's last line to mark it:\n%s", args, code, out)
		}
	}
	code, out, _ = runCLI(t, "reap", "--json", root)
	if code != exitInterrupted || !bytes.Contains([]byte(out), []byte(`"interrupted":true`)) {
		t.Fatalf("interrupted reap: exit %d\n%s", code, out)
	}
}

func TestReapCommand(t *testing.T) {
	atSampleTime(t)
	root := copySample(t)
	stray := filepath.Join(root, sample.Resumable, ".meta.db.tmp-0000000000000abc")
	os.WriteFile(stray, nil, 0o600)
	then := sample.Time.Add(-2 * time.Hour)
	os.Chtimes(stray, then, then)
	code, out, errs := runCLI(t, "reap", root)
	if code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	for _, want := range []string{
		"removed       " + sample.Expired + "  (expired key)",
		"removed       " + sample.Resumable + "/.meta.db.tmp-0000000000000abc  (stray temp file)",
		"reaped 1 key and 1 temp file; kept 4 keys, skipped 1 (TTL 14 days)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(root, sample.Expired)); !os.IsNotExist(err) {
		t.Error("the expired key is still there")
	}
	if _, err := os.Stat(stray); !os.IsNotExist(err) {
		t.Error("the stray temp is still there")
	}
	code, out, _ = runCLI(t, "reap", "--json", "--ttl-days", "0", root)
	var last summaryLine[reapSummary]
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != exitOK || json.Unmarshal([]byte(lines[len(lines)-1]), &last) != nil || last.Summary.Removed != 0 || last.Summary.TTLSeconds != 0 {
		t.Fatalf("TTL 0: exit %d\n%s", code, out)
	}
}

// A key dir an interrupted reap renamed aside, and one check --quarantine
// moved aside, are the store's own, each carrying its key: dump's NOTE
// says which and names the key, where it said "not a key" as for a
// README, and an operator reading the table saw nothing to act on (the
// reaped dir's key cold-starts absent until check --repair or the next
// reap finishes it).
func TestDumpNamesReapAndQuarantineLeftovers(t *testing.T) {
	atSampleTime(t)
	root := copySample(t)
	const key = "9ddb56ddcfac930962d0f4d375d2fd07"
	reaped := ".reaped-" + key + "-0123456789abcdef"
	quarantined := ".quarantine-4668107cac2e99b44415c5606b32ef14-20261129T090000Z"
	if err := os.Rename(filepath.Join(root, key), filepath.Join(root, reaped)); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, quarantined), 0o700); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, "dump", "--wide", root)
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	for name, want := range map[string]string{
		reaped:       "interrupted reap of key " + key + ": run sessdb check",
		quarantined:  "quarantined dir of key 4668107cac2e99b44415c5606b32ef14 (check --quarantine)",
		"README.txt": "not a key",
	} {
		var row string
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, name+" ") {
				row = l
			}
		}
		if !strings.HasSuffix(row, "  "+want) {
			t.Errorf("%s: row %q, want its NOTE %q", name, row, want)
		}
	}
}

// A transcript that is a link is not a transcript sessdb reads: dump's
// BYTES showed the link's own size (the length of its target's path) as if
// it were that many bytes of conversation, where stats counts none. The
// BYTES column summed over the rows is stats' transcript total.
func TestDumpBytesOfALinkedTranscript(t *testing.T) {
	atSampleTime(t)
	root := copySample(t)
	const key = "55c5b4543d2fe748d576d4ed795b9167"
	p := filepath.Join(root, key, "current.jsonl")
	target := filepath.Join(t.TempDir(), "elsewhere.jsonl")
	if err := os.Rename(p, target); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, "dump", root)
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	col := strings.Index(lines[0], "BYTES")
	var sum int64
	found := false
	for _, l := range lines[1:] {
		f := strings.Fields(l[col:])
		if strings.HasPrefix(l, key) {
			found = true
			if f[0] != "-" {
				t.Errorf("BYTES of a linked transcript: %q, want -", f[0])
			}
		}
		if n, err := strconv.ParseInt(f[0], 10, 64); err == nil {
			sum += n
		}
	}
	if !found {
		t.Errorf("no row for %s:\n%s", key, out)
	}
	if s := statsOf(t, root); s.Disk.TranscriptBytes != sum {
		t.Errorf("dump's BYTES sum to %d, stats says %d", sum, s.Disk.TranscriptBytes)
	}
}

// A legacy key's PROMOTED is its transcript's mtime, marked "(mtime)":
// from 100 days on the cell is wider than its column was (15), and the
// cut took the mark, so an old legacy key's age read as a record's.
func TestDumpPromotedKeepsTheMtimeMark(t *testing.T) {
	atSampleTime(t)
	root := copySample(t)
	const key = "efc1ddda39889994198ccddd21905257" // the sample's legacy key
	old := clock().Add(-400 * 24 * time.Hour)
	if err := os.Chtimes(filepath.Join(root, key, "current.jsonl"), old, old); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, "dump", root)
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	found := false
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, key) {
			found = true
			if !strings.Contains(l, "  400d ago (mtime)  ") {
				t.Errorf("row %q: want PROMOTED 400d ago (mtime)", l)
			}
		}
		if len([]rune(l)) > dumpWidth {
			t.Errorf("row wider than %d: %q", dumpWidth, l)
		}
	}
	if !found {
		t.Errorf("no row for %s:\n%s", key, out)
	}
}
