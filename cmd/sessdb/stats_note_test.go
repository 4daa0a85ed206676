package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The note that stats counted a sessions root, not the fleet, quotes the
// root as every other message names a path: a root named with spaces and
// a parenthesis read as the note's own words ("the sessions root
// /srv/a (old) (PI_SESSIONS_DIR)"), where the root ended was anyone's
// guess.
func TestStatsNoteQuotesTheRootItCounted(t *testing.T) {
	clearEnv(t)
	t.Setenv("PI_SESSIONS_ETCD_ENDPOINTS", "http://127.0.0.1:2379")
	t.Setenv("PI_SESSIONS_TRANSCRIPTS_DIR", t.TempDir())
	root := filepath.Join(t.TempDir(), "sessions (old), not the fleet's")
	if err := os.Mkdir(root, 0o700); err != nil {
		t.Fatal(err)
	}
	code, _, errs := runCLI(t, "stats", "--log-format", "console", root)
	if code != exitOK || !strings.Contains(errs, "the sessions root "+strconv.Quote(root)+" (the DIR argument)") {
		t.Errorf("stats on a root with the fleet's variables: exit %d, stderr %q; want the note naming the root %s quoted", code, errs, strconv.Quote(root))
	}
}
