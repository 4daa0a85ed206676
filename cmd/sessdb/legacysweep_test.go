package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// The legacy worker removed expired keys by itself, at boot and every
// PI_SWEEP_INTERVAL_HOURS; sessdb removes them only when 'sessdb reap'
// runs. A deployment that carried the variable over, and set no timer,
// kept every expired transcript on disk without a word. A resolve that
// finds a key expired where the variable is set says so on stderr, with
// the key, and resolves as before; where the key is not expired, or the
// variable is not set, there is nothing to say (the worker may read the
// variable for its own reapers).
func TestAnExpiredKeyBesideTheLegacySweepIntervalSaysReapMustRun(t *testing.T) {
	const expired, fresh = "55c5b4543d2fe748d576d4ed795b9167", "4668107cac2e99b44415c5606b32ef14"
	for _, c := range []struct {
		key, interval string
		warned        bool
	}{
		{expired, "24", true},
		{expired, "0", true},
		{expired, " ", false},
		{expired, "", false},
		{fresh, "24", false},
	} {
		atSampleTime(t)
		root := copySample(t)
		t.Setenv("PI_SWEEP_INTERVAL_HOURS", c.interval)
		code, out, errs := runCLI(t, "resolve", "--sessions-dir", root, "--key", c.key, "--venue", "local",
			"--job-dir", filepath.Join(t.TempDir(), "job"), "--pi-version", "0.58.3", "--log-format", "console")
		said := strings.Contains(errs, "PI_SWEEP_INTERVAL_HOURS")
		if code != exitOK || !strings.Contains(out, `"reason":`) || said != c.warned {
			t.Errorf("key %s, PI_SWEEP_INTERVAL_HOURS=%q: exit %d, stdout %q, stderr %q; want a verdict, and a warning naming the variable: %v", c.key, c.interval, code, out, errs, c.warned)
		}
		if c.warned && (!strings.Contains(errs, c.key) || !strings.Contains(errs, "sessdb reap") || !strings.Contains(out, `"reason":"expired"`)) {
			t.Errorf("key %s: stdout %q, stderr %q; want expired, and the key and 'sessdb reap' named", c.key, out, errs)
		}
		if c.key == fresh && !strings.Contains(out, `"reason":"resumed"`) {
			t.Errorf("key %s: stdout %q; want resumed", c.key, out)
		}
	}
}
