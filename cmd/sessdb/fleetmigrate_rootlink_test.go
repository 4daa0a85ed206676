package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sessdb/store"
)

// The sessions root named through a link (migrate --to etcd
// /srv/current, current -> sessions) with the fleet's transcripts dir
// inside one of its key dirs, named by its real path: refused as the root
// named by its own path is. The key dir is found by what the directories
// are, not by how their paths are spelled.
func TestMigrateRefusesATranscriptsDirInsideAKeyDirOfARootNamedThroughALink(t *testing.T) {
	key := store.Key("github", "acme/widget", "pi/in-a-linked-root")
	root := rootOfOneKey(t, key)
	inKey := filepath.Join(root, key, "transcripts")
	if err := os.Mkdir(inKey, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "current")
	if err := os.Symlink(root, link); err != nil {
		t.Fatal(err)
	}
	before := treeNames(root)
	startFleet(t)
	t.Setenv("PI_SESSIONS_TRANSCRIPTS_DIR", inKey)
	for _, args := range [][]string{{"--to", "etcd", link}, {"--from", "etcd", link}} {
		code, out, errs := runMigrateCLI(t, args...)
		if code != exitUsage || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "inside the key dir "+key+" of the sessions root this migration moves") {
			t.Errorf("migrate %q with the transcripts dir %s: exit %d, stdout %q, stderr %q; want exit 2, one line naming the key dir", args, inKey, code, out, errs)
		}
		if got := treeNames(root); !slices.Equal(got, before) {
			t.Fatalf("migrate %q changed the root: %q, was %q", args, got, before)
		}
	}
}
