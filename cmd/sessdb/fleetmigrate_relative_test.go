package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sessdb/store"
)

// The fleet's transcripts dir named relatively, from inside a key dir of
// the root (cd sessions/<key>; --transcripts-dir=transcripts), is inside
// that key dir, refused as its absolute name is: keyDirHolding walks up
// from the absolute path, and a walk up a relative one ("transcripts",
// ".") never meets the root (mutant C15).
func TestMigrateRefusesARelativeTranscriptsDirInsideAKeyDir(t *testing.T) {
	key := store.Key("github", "acme/widget", "pi/relative")
	root := rootOfOneKey(t, key)
	if err := os.Mkdir(filepath.Join(root, key, "transcripts"), 0o700); err != nil {
		t.Fatal(err)
	}
	before := treeNames(root)
	startFleet(t)
	t.Chdir(filepath.Join(root, key))
	code, out, errs := runMigrateCLI(t, "--to", "etcd", "--transcripts-dir=transcripts", root)
	if code != exitUsage || out != "" || !strings.Contains(errs, "inside the key dir "+key+" of the sessions root this migration moves") {
		t.Errorf("--transcripts-dir=transcripts from inside the key dir: exit %d, stdout %q, stderr %q; want exit 2 naming the key dir", code, out, errs)
	}
	if got := treeNames(root); !slices.Equal(got, before) {
		t.Errorf("the root changed: %q, was %q", got, before)
	}
}
