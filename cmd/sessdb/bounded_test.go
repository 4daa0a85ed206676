package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"sessdb/internal/sample"
)

// readBytes is the bytes this process has read so far (rchar of
// /proc/self/io: every read and pread, from files and pipes alike).
func readBytes(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		t.Skipf("no /proc/self/io: %v", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "rchar: "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	t.Skip("no rchar in /proc/self/io")
	return 0
}

// check and dump --verify on a sparse 64 GiB transcript whose record says
// 742 bytes read next to nothing of it and report the mismatch, with the
// default max-bytes bound and with none (issue 15.6: 29 s and 110 s, the
// whole file read).
func TestCheckAndVerifyReadBoundedOnASparseTranscript(t *testing.T) {
	for _, maxBytes := range []string{"8388608", "0"} {
		atSampleTime(t)
		root := copySample(t)
		p := filepath.Join(root, sample.Expired, "current.jsonl")
		if err := os.Truncate(p, 64<<30); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{
			{"check", "--max-bytes", maxBytes, root},
			{"dump", "--verify", "--wide", "--max-bytes", maxBytes, root},
			{"dump", "--verify", "--json", "--max-bytes", maxBytes, root},
		} {
			before := readBytes(t)
			code, out, errs := runCLI(t, args...)
			read := readBytes(t) - before
			if read > 16<<20 {
				t.Errorf("%v read %d bytes, want well under the transcript's 64 GiB", args, read)
			}
			if !strings.Contains(out, "68719476736 bytes, the record says 742") {
				t.Errorf("%v: exit %d, no mismatch reported:\n%s%s", args, code, out, errs)
			}
		}
	}
}

// Text output escapes the control bytes a name or a stamp can carry, so a
// hostile key dir name or record cannot drive the operator's terminal;
// JSON escapes them already, and round-trips them.
func TestTextOutputEscapesControlBytes(t *testing.T) {
	atSampleTime(t)
	root := copySample(t)
	evil := "\x1b]0;pwned\x07\x1b[2J\rname\nwith\tbreaks\u202e\x9b"
	if err := os.Mkdir(filepath.Join(root, evil), 0o700); err != nil {
		t.Fatal(err)
	}
	os.Symlink("/tmp/\x1b[31mred", filepath.Join(root, sample.Expired, "venue"))
	os.WriteFile(filepath.Join(root, sample.Legacy, "venue"), []byte("loc\x1b[8mal"), 0o600)
	// (The table without --wide cuts a long cell, the escaped name among
	// them: its escaped start shows; --wide shows it whole.)
	for _, args := range [][]string{{"dump"}, {"dump", "--wide"}, {"dump", "--verify", "--wide"}, {"check"}, {"check", "--repair"}, {"reap", "--dry-run"}} {
		_, out, errs := runCLI(t, append(args, root)...)
		if i := bytes.IndexFunc([]byte(out), func(r rune) bool {
			return r < 0x20 && r != '\n' || r == 0x7f || r >= 0x80 && r < 0xa0 || r == '\u202e'
		}); i >= 0 {
			t.Errorf("%v: a raw control character reached stdout at %d: %q", args, i, out[max(0, i-20):min(len(out), i+20)])
		}
		cut := len(args) == 1 && args[0] == "dump"
		if !strings.Contains(out, `\x1b]0;pwned\x07\x1b[2J\rname\nwith\tbreaks\u202e\x9b`) && !(cut && strings.Contains(out, `\x1b]0;pwned\x07\x1b[2J\rname\n`)) {
			t.Errorf("%v: the name is not shown escaped:\n%s%s", args, out, errs)
		}
		if args[0] == "dump" && !strings.Contains(out, `loc\x1b[8mal`) && !(cut && strings.Contains(out, `loc\x1b`)) {
			t.Errorf("%v: the venue stamp is not shown escaped:\n%s", args, out)
		}
	}
	for _, args := range [][]string{{"dump", "--json"}, {"check", "--json"}} {
		_, out, _ := runCLI(t, append(args, root)...)
		if i := strings.IndexFunc(out, func(r rune) bool { return r < 0x20 && r != '\n' }); i >= 0 {
			t.Errorf("%v: a raw control character in JSON at %d", args, i)
		}
		if !strings.Contains(out, `\u001b]0;pwned\u0007\u001b[2J\rname\nwith\tbreaks`) {
			t.Errorf("%v: the name is not in the JSON, escaped:\n%s", args, out)
		}
	}
}
