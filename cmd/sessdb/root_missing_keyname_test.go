package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A sessions root named like a key that does not exist is not judged by
// the files of the working directory: notAKeyDir looks for meta.db and
// current.jsonl where the root's links lead, and a root whose links cannot
// be followed leads nowhere. A look at "" joined to meta.db (mutant C05:
// EvalSymlinks' error ignored) found the working directory's, and refused
// the root as a key dir it is not.
func TestAMissingRootNamedLikeAKeyIsNotJudgedByTheWorkingDir(t *testing.T) {
	atSampleTime(t)
	wd := t.TempDir()
	for _, f := range []string{"meta.db", "current.jsonl"} {
		if err := os.WriteFile(filepath.Join(wd, f), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(wd)
	missing := filepath.Join(t.TempDir(), "4668107cac2e99b44415c5606b32ef14")
	t.Setenv("PI_SESSIONS_DIR", missing)
	_, _, errs := runCLI(t, "stats", "--json", "--log-format", "console")
	if strings.Contains(errs, "is a key dir") {
		t.Errorf("PI_SESSIONS_DIR=%s (absent) from a dir holding meta.db: stderr %q; want no key dir named", missing, errs)
	}
}
