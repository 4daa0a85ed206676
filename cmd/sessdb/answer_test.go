package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An answer resolve or promote could not write (a full disk) exits 1, as a
// missing ticket does; but what the command did is done, and a worker must
// be able to tell the two apart without a retry: the stderr line names the
// key, what was done, and how to read the answer again.
func TestAnswerNotWrittenSaysWhatWasDone(t *testing.T) {
	clearEnv(t)
	root := filepath.Join(t.TempDir(), "sessions")
	os.Mkdir(root, 0o700)
	job := t.TempDir()
	key := strings.Repeat("e", 32)
	stderrLine := func(args ...string) map[string]any {
		t.Helper()
		var errb bytes.Buffer
		code := run(append(args, "--sessions-dir", root, "--log-format", "json"), fullWriter{}, &errb)
		var line map[string]any
		if err := json.Unmarshal(errb.Bytes(), &line); code != exitFault || err != nil {
			t.Fatalf("%s to a full disk: exit %d, stderr %q; want exit 1 and one JSON line", args[0], code, errb.String())
		}
		return line
	}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"resolve", "--key", key, "--job-dir", job, "--pi-version", "1"}, []string{"absent", "not written on stdout", "no space left on device", "resolve again"}},
		{[]string{"promote", "--job-dir", job, "--pi-version", "1"}, []string{"promoted gen 1", "not written on stdout", "no space left on device", "promote again with the same ticket"}},
		{[]string{"promote", "--job-dir", job, "--pi-version", "1"}, []string{"promoted gen 1 (a repeat)", "not written on stdout", "promote again with the same ticket"}},
	} {
		line := stderrLine(c.args...)
		msg, _ := line["message"].(string)
		if line["key"] != key || line["exit"] != float64(exitFault) {
			t.Errorf("%s: stderr line %v; want the key %s and exit 1", c.args[0], line, key)
		}
		for _, w := range c.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: message %q does not say %q", c.args[0], msg, w)
			}
		}
		if c.args[0] == "resolve" {
			os.WriteFile(filepath.Join(job, "session", "current.jsonl"), []byte(header), 0o600)
		}
	}
	code, out, errs := runCLI(t, "promote", "--sessions-dir", root, "--job-dir", job, "--pi-version", "1")
	if code != exitOK || !strings.Contains(out, `"gen":1,"run":"unanswered","repeat":true`) {
		t.Fatalf("promote read again: exit %d, %s%s; want the repeat of gen 1", code, out, errs)
	}
}

// version's line not written (a full disk) is worded the same with and
// without --json: "write: " and the cause, exit 1. Before, --json said
// "write result: ".
func TestVersionNotWrittenIsWordedAlike(t *testing.T) {
	clearEnv(t)
	for _, args := range [][]string{{"version"}, {"version", "--json"}} {
		var errb bytes.Buffer
		code := run(append(args, "--log-format", "json"), fullWriter{}, &errb)
		var line map[string]any
		if err := json.Unmarshal(errb.Bytes(), &line); code != exitFault || err != nil {
			t.Fatalf("%v to a full disk: exit %d, stderr %q; want exit 1 and one JSON line", args, code, errb.String())
		}
		if msg, _ := line["message"].(string); !strings.HasPrefix(msg, "write: ") || !strings.Contains(msg, "no space left on device") {
			t.Errorf("%v to a full disk says %q; want \"write: \" and the cause", args, msg)
		}
	}
}

// help's usage error is written as --log-format asks, as an unknown
// command's is: one "sessdb help: " line on the console, one JSON object
// with json. Before, the flag was not looked at (the tests' stderr is
// taken for a terminal's: console).
func TestHelpUsageErrorFollowsLogFormat(t *testing.T) {
	clearEnv(t)
	for _, format := range []string{"console", "json"} {
		for _, args := range [][]string{{"help", "nosuch", "--log-format", format}, {"help", "dump", "--log-format=" + format}} {
			var out, errb bytes.Buffer
			if code := run(args, &out, &errb); code != exitUsage || out.Len() != 0 {
				t.Fatalf("%v: exit %d, stdout %q; want exit 2 and nothing on stdout", args, code, out.String())
			}
			var line map[string]any
			isJSON := json.Unmarshal(errb.Bytes(), &line) == nil
			if format == "json" && (!isJSON || line["cmd"] != "help" || line["exit"] != float64(exitUsage)) ||
				format == "console" && (isJSON || !strings.HasPrefix(errb.String(), "sessdb help: ")) {
				t.Errorf("%v: stderr %q; want one %s line", args, errb.String(), format)
			}
		}
	}
}
