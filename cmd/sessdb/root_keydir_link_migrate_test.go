package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A sessions root named by a link to a key dir (the link's own name no
// key) is refused as the key dir itself is, naming the key dir's parent:
// before, the check read the link's name alone, and migrate --from etcd
// wrote the fleet's every key inside the key's dir, exit 0; a resolve
// cold-started every key there, and a promote made a key dir inside it.
func TestASessionsRootThatIsALinkToAKeyDirIsRefused(t *testing.T) {
	atSampleTime(t)
	root := copySample(t)
	const dbKey, legacyKey = "4668107cac2e99b44415c5606b32ef14", "efc1ddda39889994198ccddd21905257"
	links := t.TempDir()
	for _, k := range []string{dbKey, legacyKey} {
		if err := os.Symlink(filepath.Join(root, k), filepath.Join(links, "sessions-"+k[:4])); err != nil {
			t.Fatal(err)
		}
	}
	job := filepath.Join(t.TempDir(), "job")
	for _, c := range []struct {
		dir  string
		args []string
		file string
	}{
		{filepath.Join(links, "sessions-"+dbKey[:4]), []string{"resolve", "--key", "9ddb56ddcfac930962d0f4d375d2fd07", "--job-dir", job, "--pi-version", "0.58.3"}, "meta.db"},
		{filepath.Join(links, "sessions-"+legacyKey[:4]), []string{"migrate", "--json"}, "current.jsonl"},
		{filepath.Join(links, "sessions-"+dbKey[:4]), []string{"migrate", "--to-legacy"}, "meta.db"},
		{filepath.Join(links, "sessions-"+dbKey[:4]) + "/", []string{"reap", "--json"}, "meta.db"},
	} {
		before := treeNames(root)
		t.Setenv("PI_SESSIONS_DIR", c.dir)
		code, out, errs := runCLI(t, append(c.args, "--log-format", "console")...)
		if code != exitUsage || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "PI_SESSIONS_DIR") || !strings.Contains(errs, c.file) || !strings.Contains(errs, "is a key dir") || !strings.Contains(errs, "its parent, "+quoteName(root)) {
			t.Errorf("PI_SESSIONS_DIR=%q %q: exit %d, stdout %q, stderr %q; want exit 2, one line naming the setting, %s, the key dir and its parent", c.dir, c.args, code, out, errs, c.file)
		}
		if after := treeNames(root); !slices.Equal(after, before) {
			t.Errorf("%q: the sessions root changed: %q, was %q", c.args, after, before)
		}
	}
	// A link to a real root is a root.
	if err := os.Symlink(root, filepath.Join(links, "root")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PI_SESSIONS_DIR", filepath.Join(links, "root"))
	if code, out, errs := runCLI(t, "migrate", "--dry-run"); code != exitOK {
		t.Errorf("migrate --dry-run through a link to the root: exit %d\n%s%s", code, out, errs)
	}
}
