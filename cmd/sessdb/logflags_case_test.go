package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// --log-level and --log-format take their words in any case, alike:
// --log-level WARN was taken (zerolog's ParseLevel ignores case) where
// --log-format JSON was a usage error. A format in capitals is the format
// from the first line on, a usage error before it too. Neither takes a
// number: ParseLevel read "2" as warn and "-1" as trace, a form no help
// gives.
func TestLogFlagsTakeTheirWordsInAnyCase(t *testing.T) {
	clearEnv(t)
	root := copySample(t)
	missing := root + "/nosuch"
	for _, args := range [][]string{
		{"dump", "--log-format", "JSON", "--log-level", "WARN", missing},
		{"dump", "--log-format=Json", "--log-level=Error", missing},
		{"dump", "--bogus", "--log-format", "JSON"}, // a usage error, in the format asked
	} {
		var out, errb bytes.Buffer
		code := run(args, &out, &errb)
		var line map[string]any
		if code == exitOK || out.Len() != 0 || strings.Count(errb.String(), "\n") != 1 || json.Unmarshal(errb.Bytes(), &line) != nil ||
			line["cmd"] != "dump" || strings.Contains(errb.String(), "--log-") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want one JSON error line, not about the logging flags", args, code, out.String(), errb.String())
		}
	}
	for _, args := range [][]string{
		{"dump", "--log-format", "CONSOLE", "--log-level", "Debug", root},
		{"dump", "--log-format", "Auto", "--log-level", "INFO", root},
	} {
		if code, _, errs := runCLI(t, args...); code != exitOK || strings.Contains(errs, "--log-") {
			t.Errorf("%q: exit %d, stderr %q; want exit 0", args, code, errs)
		}
	}
	for _, level := range []string{"2", "0", "-1", "3", "+1", " warn", "warning"} {
		code, out, errs := runCLI(t, "dump", "--log-level", level, root, "--log-format", "console")
		if code != exitUsage || out != "" || !strings.Contains(errs, "--log-level") {
			t.Errorf("--log-level %q: exit %d, stdout %q, stderr %q; want exit 2 naming --log-level", level, code, brief(out), errs)
		}
	}
}
