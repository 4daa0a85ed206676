package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// A key dir named relatively ("." from inside it, or a path ending in
// "/.") is judged by the directory it names, not by the last element as
// written: it is refused as a sessions root as its absolute path is.
func TestASessionsRootThatIsAKeyDirNamedRelativelyIsRefused(t *testing.T) {
	atSampleTime(t)
	root := copySample(t)
	const dbKey = "4668107cac2e99b44415c5606b32ef14"
	t.Chdir(filepath.Join(root, dbKey))
	for _, dir := range []string{".", "../" + dbKey + "/."} {
		t.Setenv("PI_SESSIONS_DIR", dir)
		code, out, errs := runCLI(t, "stats", "--json", "--log-format", "console")
		if code != exitUsage || out != "" || !strings.Contains(errs, "is a key dir") || !strings.Contains(errs, "meta.db") {
			t.Errorf("PI_SESSIONS_DIR=%q in the key dir: exit %d, stdout %q, stderr %q; want exit 2, the key dir refused", dir, code, out, errs)
		}
	}
}
