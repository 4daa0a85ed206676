package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A sessions root set one level too deep, at a key dir (a path copied
// from a dump or a log), exists, so nothing said so: resolve cold-started
// every key absent, and promote made a key dir inside that key's dir,
// exit 0, where no worker with the right root reads it; the reap of the
// real root then refused that key for good ("a directory, not the
// store's"). Every command refuses such a root, exit 2, naming the
// setting, the file that makes it a key dir, and its parent; the key dir
// is left as it was. A real root holding a copy of a key's files at its
// top (an operator's look at them) is a root as before: its name is no
// key.
func TestASessionsRootThatIsAKeyDirIsRefused(t *testing.T) {
	atSampleTime(t)
	root := copySample(t)
	const dbKey, legacyKey = "4668107cac2e99b44415c5606b32ef14", "efc1ddda39889994198ccddd21905257"
	job := filepath.Join(t.TempDir(), "job")
	for _, c := range []struct {
		env  string // PI_SESSIONS_DIR
		args []string
		name string // the setting named
		file string // the file named
	}{
		{filepath.Join(root, dbKey), []string{"resolve", "--key", "9ddb56ddcfac930962d0f4d375d2fd07", "--job-dir", job, "--pi-version", "0.58.3"}, "PI_SESSIONS_DIR", "meta.db"},
		{"", []string{"resolve", "--key", "9ddb56ddcfac930962d0f4d375d2fd07", "--job-dir", job, "--pi-version", "0.58.3", "--sessions-dir", filepath.Join(root, legacyKey) + "/"}, "--sessions-dir", "current.jsonl"},
		{filepath.Join(root, dbKey), []string{"promote", "--job-dir", job, "--pi-version", "0.58.3"}, "PI_SESSIONS_DIR", "meta.db"},
		{"", []string{"dump", "--json", filepath.Join(root, dbKey)}, "DIR argument", "meta.db"},
		{filepath.Join(root, legacyKey), []string{"stats", "--json"}, "PI_SESSIONS_DIR", "current.jsonl"},
		{filepath.Join(root, dbKey), []string{"check", "--repair", "--json"}, "PI_SESSIONS_DIR", "meta.db"},
		{"", []string{"reap", "--json", filepath.Join(root, dbKey)}, "DIR argument", "meta.db"},
		{filepath.Join(root, legacyKey), []string{"migrate", "--json"}, "PI_SESSIONS_DIR", "current.jsonl"},
	} {
		before := treeNames(root)
		t.Setenv("PI_SESSIONS_DIR", c.env)
		code, out, errs := runCLI(t, append(c.args, "--log-format", "console")...)
		if code != exitUsage || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, c.name) || !strings.Contains(errs, c.file) || !strings.Contains(errs, "is a key dir") || !strings.Contains(errs, filepath.Base(root)) {
			t.Errorf("PI_SESSIONS_DIR=%q %q: exit %d, stdout %q, stderr %q; want exit 2, one line naming %s, %s, the key dir and its parent", c.env, c.args, code, out, errs, c.name, c.file)
		}
		if after := treeNames(root); !slices.Equal(after, before) {
			t.Errorf("%q: the sessions root changed: %q, was %q", c.args, after, before)
		}
	}
	if _, err := os.Lstat(job); err == nil {
		t.Errorf("a refused resolve made the job dir")
	}
	for _, f := range []string{"meta.db", "current.jsonl"} {
		b, err := os.ReadFile(filepath.Join(root, dbKey, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PI_SESSIONS_DIR", root)
	if code, _, errs := runCLI(t, "stats", "--json"); code != exitOK {
		t.Errorf("stats of the sample root holding a key's files at its top: exit %d, stderr %q", code, errs)
	}
}
