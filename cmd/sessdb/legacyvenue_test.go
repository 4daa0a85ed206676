package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// The legacy worker took a job's venue from PI_BACKENDS' first backend
// (run.backend aside); sessdb reads --venue alone, local when not given.
// A deployment whose PI_BACKENDS names another backend first, and whose
// resolve gives no --venue, had each key its legacy workers stamped so
// cold-start venue-changed, and then stamped local for a run that ran
// elsewhere, without a word: resolve says so now, on stderr, and resolves
// as before. Where --venue is given, or PI_BACKENDS names local first,
// there is nothing to say.
func TestAResolveWithoutVenueBesideALegacyBackendListSaysSo(t *testing.T) {
	for _, c := range []struct {
		backends string
		venue    bool
		warned   bool
	}{
		{"podman", false, true},
		{" podman , local", false, true},
		{"local,podman", false, false},
		{"local", false, false},
		{"podman", true, false},
		{"", false, false},
	} {
		clearEnv(t)
		root := copySample(t)
		t.Setenv("PI_BACKENDS", c.backends)
		args := []string{"resolve", "--sessions-dir", root, "--key", "4668107cac2e99b44415c5606b32ef14",
			"--job-dir", filepath.Join(t.TempDir(), "job"), "--pi-version", "0.58.3", "--log-format", "console"}
		if c.venue {
			args = append(args, "--venue", "podman")
		}
		code, out, errs := runCLI(t, args...)
		said := strings.Contains(errs, "PI_BACKENDS")
		if code != exitOK || !strings.Contains(out, `"reason":`) || said != c.warned {
			t.Errorf("PI_BACKENDS=%q, --venue given %v: exit %d, stdout %q, stderr %q; want a verdict, and a warning naming PI_BACKENDS: %v", c.backends, c.venue, code, out, errs, c.warned)
		}
		if c.warned && (!strings.Contains(errs, "podman") || !strings.Contains(errs, "--venue") || !strings.Contains(errs, "venue-changed")) {
			t.Errorf("PI_BACKENDS=%q: stderr %q; want the backend named, --venue and venue-changed", c.backends, errs)
		}
	}
}
