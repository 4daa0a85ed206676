package main

import (
	"os"
	"path/filepath"
	"testing"
)

// The quote rule refuses a name wholly in quotes, and nothing else of
// the same look: a root written with its trailing slash (as a shell
// completes it) begins and ends with one character, and a name that is a
// quote alone opens no quoting. Each is walked.
func TestALoneQuoteOrATrailingSlashIsAName(t *testing.T) {
	clearEnv(t)
	dir := filepath.Join(t.TempDir(), "sessions")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	names := []string{dir + "/"}
	for _, q := range []string{"'", `"`} {
		if err := os.Mkdir(q, 0o700); err != nil {
			t.Fatal(err)
		}
		names = append(names, q)
	}
	for _, name := range names {
		if code, _, errs := runCLI(t, "dump", name, "--log-format", "console"); code != exitOK {
			t.Errorf("dump %s: exit %d, %s; want it walked", name, code, errs)
		}
		t.Setenv("PI_SESSIONS_DIR", name)
		if code, _, errs := runCLI(t, "check", "--log-format", "console"); code != exitOK {
			t.Errorf("PI_SESSIONS_DIR=%s check: exit %d, %s; want it walked", name, code, errs)
		}
	}
}
