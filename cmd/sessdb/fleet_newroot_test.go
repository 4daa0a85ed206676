package main

import (
	"slices"
	"strings"
	"testing"

	"sessdb/store"
)

// A new fleet (no record yet) whose transcripts dir is a sessions root (a
// worker's old PI_SESSIONS_DIR kept under the new name, the slip
// TestAFleetRefusesASessionsRootAsItsTranscriptsDir models for a fleet
// with records) is refused as that fleet is, exit 2, and told the dir is
// a sessions root and that migrate --to etcd moves one into the fleet.
// Before, it was refused as a dir of another fleet's key dirs from before
// marks, and told to move the key dirs aside: the sessions root's own
// keys, after which the fleet would mark the emptied root as its dir.
func TestANewFleetIsToldASessionsRootIsOne(t *testing.T) {
	root := rootOfOneKey(t, store.Key("github", "acme/widget", "pi/old-root"))
	before := treeNames(root)
	startFleet(t) // no job run: the fleet has no record
	t.Setenv("PI_SESSIONS_TRANSCRIPTS_DIR", root)
	for _, args := range [][]string{{"check", "--json"}, {"reap", "--dry-run", "--json"}, {"reap", "--json"}} {
		code, out, errs := runCLI(t, args...)
		if code != exitUsage || out != "" || !strings.Contains(errs, "it is a sessions root") || !strings.Contains(errs, "migrate --to etcd") || strings.Contains(errs, "move the key dir") {
			t.Errorf("%q by a new fleet on a sessions root: exit %d, stdout %q, stderr %q; want exit 2, the dir named a sessions root, migrate --to etcd the way", args, code, out, errs)
		}
	}
	if got := treeNames(root); !slices.Equal(got, before) {
		t.Errorf("the root changed: %q, was %q", got, before)
	}
}
