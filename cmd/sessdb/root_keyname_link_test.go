package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A sessions root named like a key that is a link to a directory of
// another name holding a key's files (sessions/<key> -> /backup/conv, a
// key dir moved aside and linked back) is that key dir: refused as a root
// named so always was, whatever name the link leads to. d0ace08 judged
// the name given and the name the link leads to; a check of the latter
// alone would take this root for one.
func TestASessionsRootNamedLikeAKeyThatLinksToAKeyDirIsRefused(t *testing.T) {
	atSampleTime(t)
	root := copySample(t)
	const dbKey = "4668107cac2e99b44415c5606b32ef14"
	aside := filepath.Join(t.TempDir(), "conversation")
	if err := os.Rename(filepath.Join(root, dbKey), aside); err != nil {
		t.Fatal(err)
	}
	named := filepath.Join(t.TempDir(), dbKey)
	if err := os.Symlink(aside, named); err != nil {
		t.Fatal(err)
	}
	before := treeNames(aside)
	t.Setenv("PI_SESSIONS_DIR", named)
	code, out, errs := runCLI(t, "stats", "--json", "--log-format", "console")
	if code != exitUsage || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "is a key dir") || !strings.Contains(errs, "meta.db") || !strings.Contains(errs, aside) {
		t.Errorf("PI_SESSIONS_DIR=%s (named like a key, a link to %s): exit %d, stdout %q, stderr %q; want exit 2, one line naming meta.db and where the link leads", named, aside, code, out, errs)
	}
	if after := treeNames(aside); !slices.Equal(after, before) {
		t.Errorf("the key dir changed: %q, was %q", after, before)
	}
}
