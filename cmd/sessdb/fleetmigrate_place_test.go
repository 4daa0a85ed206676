package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sessdb/store"
)

// A transcripts dir inside the sessions root at a name that is no key
// (mutnew46's C18c), and a sessions root inside the transcripts dir (one
// that --from etcd is to make there too), are refused as a transcripts
// dir inside a key dir is: exit 2, one line naming the knob and where the
// one is inside the other, nothing written. Before, --to etcd wrote the
// fleet's every generation file inside the root it leaves as the way
// back (a removal of the old root took them), and --from etcd wrote key
// dirs into the fleet's dir (check: notices; reap left them).
func TestMigrateRefusesATranscriptsDirInTheRootAndARootInTheTranscriptsDir(t *testing.T) {
	key := store.Key("github", "acme/widget", "pi/placed")
	root := rootOfOneKey(t, key)
	inRoot := filepath.Join(root, "fleet")
	if err := os.Mkdir(inRoot, 0o700); err != nil {
		t.Fatal(err)
	}
	outer := t.TempDir()
	before, outerBefore := treeNames(root), treeNames(outer)
	f := startFleet(t)
	for _, c := range []struct {
		env  string
		args []string
		want string
	}{
		{inRoot, []string{"--to", "etcd", root}, "is inside the sessions root this migration moves (the DIR argument), at \"fleet\""},
		{inRoot, []string{"--from", "etcd", "--dry-run", root}, "is inside the sessions root this migration moves (the DIR argument), at \"fleet\""},
		{outer, []string{"--from", "etcd", filepath.Join(outer, "back")}, "the sessions root this migration moves (the DIR argument) is inside"},
		{f.dir, []string{"--to", "etcd", "--transcripts-dir=" + filepath.Dir(root), root}, "the sessions root this migration moves (the DIR argument) is inside"},
	} {
		t.Setenv("PI_SESSIONS_TRANSCRIPTS_DIR", c.env)
		code, out, errs := runMigrateCLI(t, c.args...)
		name := "PI_SESSIONS_TRANSCRIPTS_DIR"
		if strings.HasPrefix(c.args[2], "--transcripts-dir") {
			name = "--transcripts-dir"
		}
		if code != exitUsage || out != "" || strings.Count(errs, "\n") != 1 || !strings.HasPrefix(errs, "sessdb migrate: "+name+": ") || !strings.Contains(errs, c.want) {
			t.Errorf("PI_SESSIONS_TRANSCRIPTS_DIR=%s migrate %q: exit %d, stdout %q, stderr %q; want exit 2, one line naming %s and %q", c.env, c.args, code, out, errs, name, c.want)
		}
		if got := treeNames(root); !slices.Equal(got, before) {
			t.Fatalf("migrate %q changed the root: %q, was %q", c.args, got, before)
		}
		if got := treeNames(outer); !slices.Equal(got, outerBefore) {
			t.Fatalf("migrate %q changed the outer dir: %q, was %q", c.args, got, outerBefore)
		}
	}
}
