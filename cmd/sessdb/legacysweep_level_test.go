package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// The legacy sweep's warning is a warning: written at --log-level warn and
// below, and not at error, as every other warning is, in either format.
func TestTheLegacySweepWarningFollowsTheLogLevel(t *testing.T) {
	const expired = "55c5b4543d2fe748d576d4ed795b9167"
	for _, format := range []string{"console", "json"} {
		for _, c := range []struct {
			level  string
			warned bool
		}{{"warn", true}, {"error", false}} {
			atSampleTime(t)
			root := copySample(t)
			t.Setenv("PI_SWEEP_INTERVAL_HOURS", "24")
			code, out, errs := runCLI(t, "resolve", "--sessions-dir", root, "--key", expired, "--venue", "local",
				"--job-dir", filepath.Join(t.TempDir(), "job"), "--pi-version", "0.58.3", "--log-format", format, "--log-level", c.level)
			if said := strings.Contains(errs, "PI_SWEEP_INTERVAL_HOURS"); code != exitOK || !strings.Contains(out, `"reason":"expired"`) || said != c.warned {
				t.Errorf("--log-format %s --log-level %s: exit %d, stdout %q, stderr %q; want expired, warned %v", format, c.level, code, out, errs, c.warned)
			}
		}
	}
}
