package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A fleet's reap shows the progress line a sessions root's reap shows
// (operations.md, Progress): over a terminal (forced here) `reap N/N` on
// stderr, rewritten in place and erased before the report; nothing into
// a file or a pipe, nothing with --log-format json (every stderr line
// JSON), and never on stdout, --json or not. Before, the fleet's reap
// showed no line at all: fleet.ReapOptions had no Progress.
func TestFleetReapShowsTheRootsProgressLine(t *testing.T) {
	atSampleTime(t)
	root := copySample(t)
	if err := os.Remove(filepath.Join(root, "README.txt")); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := runCLI(t, "migrate", root); code != exitOK {
		t.Fatalf("migrate: exit %d\n%s%s", code, out, errs)
	}
	startFleet(t)
	if sum := migrateJSON(t, exitOK, "migrate", "--to", "etcd", "--json", root); sum.Migrated != 5 {
		t.Fatalf("--to etcd = %+v, want 5 keys migrated", sum)
	}
	fleetEnv := map[string]string{}
	for _, v := range []string{"PI_SESSIONS_DIR", "PI_SESSIONS_ETCD_ENDPOINTS", "PI_SESSIONS_TRANSCRIPTS_DIR", "PI_SESSIONS_ETCD_PREFIX"} {
		fleetEnv[v] = os.Getenv(v)
	}
	onRoot := func(args ...string) (int, string, string) {
		t.Helper()
		for v := range fleetEnv {
			t.Setenv(v, "")
		}
		t.Setenv("PI_SESSIONS_DIR", root)
		defer func() {
			for v, val := range fleetEnv {
				t.Setenv(v, val)
			}
		}()
		return runCLI(t, args...)
	}
	t.Cleanup(func() { forceProgress = false })
	for _, terminal := range []bool{true, false} {
		forceProgress = terminal
		for _, args := range [][]string{
			{"reap", "--dry-run"},
			{"reap", "--dry-run", "--json"},
			{"reap", "--dry-run", "--log-format", "json"},
			{"reap"}, // the last: it removes the sample's expired key
		} {
			rc, rout, rerrs := onRoot(args...)
			fc, fout, ferrs := runCLI(t, args...)
			if rc != exitOK || fc != exitOK {
				t.Fatalf("%v: exit %d on the root, %d on the fleet\n%s%q\n%s%q", args, rc, fc, rout, rerrs, fout, ferrs)
			}
			shows := terminal && args[len(args)-1] != "json"
			for _, run := range []struct{ where, out, errs string }{{"root", rout, rerrs}, {"fleet", fout, ferrs}} {
				// The line's last state, every entry done, then erased.
				line := strings.Contains(run.errs, "\rreap 5/5") && strings.HasSuffix(run.errs, "\r"+strings.Repeat(" ", len("reap")+24)+"\r")
				if line != shows || !shows && strings.Contains(run.errs, "\r") || strings.Contains(run.out, "\r") {
					t.Errorf("%v over a terminal %v, on the %s: stderr %q, stdout %q; want a progress line on stderr: %v", args, terminal, run.where, run.errs, brief(run.out), shows)
				}
			}
		}
	}
}
