package main

import (
	"strings"
	"testing"
)

// A fleet variable set without endpoints is refused by stats, exit 2,
// naming it, as dump (and every command that takes the fleet's flags)
// refuses the same environment: stats counted the root in silence, its
// figures those of a root a fleet worker with that environment would
// never have run on. With endpoints set too, stats still counts a root
// it is given, and says so
// (TestStatsOnARootWithAFleetEnvironmentSaysWhichItCounted).
func TestStatsRefusesAFleetSettingWithoutEndpoints(t *testing.T) {
	root := copySample(t)
	for _, kv := range [][2]string{
		{"PI_SESSIONS_TRANSCRIPTS_DIR", t.TempDir()},
		{"PI_SESSIONS_ETCD_PREFIX", "/sessdb"},
		{"PI_SESSIONS_ETCD_TIMEOUT", "5s"},
		{"PI_SESSIONS_ETCD_USER", "sessdb"},
		{"PI_SESSIONS_ETCD_PASSWORD", fleetSecret},
	} {
		for _, args := range [][]string{{"stats", root}, {"dump", root}} {
			clearEnv(t)
			t.Setenv(kv[0], kv[1])
			code, out, errs := runCLI(t, args...)
			if code != exitUsage || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, kv[0]) ||
				!strings.Contains(errs, "without a fleet") || strings.Contains(errs, fleetSecret) {
				t.Errorf("%s=%q %q: exit %d, stdout %q, stderr %q; want exit 2, one line naming %s, a fleet setting without a fleet",
					kv[0], kv[1], args, code, brief(out), errs, kv[0])
			}
		}
	}
	// Unset, or set empty (unset), stats counts the root.
	clearEnv(t)
	t.Setenv("PI_SESSIONS_TRANSCRIPTS_DIR", "")
	if code, out, errs := runCLI(t, "stats", root); code != exitOK || out == "" || errs != "" {
		t.Errorf("stats with no fleet setting: exit %d, stderr %q; want exit 0, nothing on stderr", code, errs)
	}
}
