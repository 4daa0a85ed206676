package main

import (
	"strings"
	"testing"

	"sessdb/store"
)

// A transcripts dir that is the sessions root itself is refused in the
// words of that place, not of another's: "is the sessions root this
// migration moves", naming the knob and the root's setting. The other
// tests asked only for the root's setting, which every refusal names, so
// a CLI that said "the sessions root ... is inside" the transcripts dir
// survived them (mutnew47's C03).
func TestMigrateRefusingTheRootAsItsTranscriptsDirSaysSo(t *testing.T) {
	root := rootOfOneKey(t, store.Key("github", "acme/widget", "pi/itself"))
	startFleet(t)
	t.Setenv("PI_SESSIONS_TRANSCRIPTS_DIR", root)
	for _, args := range [][]string{{"--to", "etcd", root}, {"--from", "etcd", "--dry-run", root}} {
		code, out, errs := runMigrateCLI(t, args...)
		want := "sessdb migrate: PI_SESSIONS_TRANSCRIPTS_DIR: " + quoteName(root) + " is the sessions root this migration moves (the DIR argument): the fleet's transcripts dir is a directory of its own"
		if code != exitUsage || out != "" || !strings.HasPrefix(errs, want) {
			t.Errorf("migrate %q: exit %d, stdout %q, stderr %q; want exit 2 and %q", args, code, out, errs, want)
		}
	}
}
