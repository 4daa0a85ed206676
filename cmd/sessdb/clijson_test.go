package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A sessions root whose name begins or ends with white space is a quoting
// mistake in a worker's environment (PI_SESSIONS_DIR=' ', an env file's
// trailing blank): taken as given, it is a relative directory made in the
// worker's working directory, or another root beside the real one, and
// every key is absent there while promote fills it. It is a configuration
// error naming the variable or flag, exit 2, nothing written anywhere.
func TestSessionsRootWithWhiteSpaceIsAnError(t *testing.T) {
	clearEnv(t)
	cwd := t.TempDir()
	t.Chdir(cwd)
	real := filepath.Join(t.TempDir(), "sessions")
	key := strings.Repeat("d1", 16)
	for _, c := range []struct {
		env, flag, name string
	}{
		{env: " ", name: "PI_SESSIONS_DIR"},
		{env: "\t", name: "PI_SESSIONS_DIR"},
		{env: real + " ", name: "PI_SESSIONS_DIR"},
		{env: real + "\n", name: "PI_SESSIONS_DIR"},
		{flag: " " + real, name: "--sessions-dir"},
		{flag: "\u00a0", name: "--sessions-dir"},
	} {
		t.Setenv("PI_SESSIONS_DIR", c.env)
		job := filepath.Join(t.TempDir(), "job")
		args := []string{"resolve", "--key", key, "--job-dir", job, "--pi-version", "1"}
		if c.flag != "" {
			args = append(args, "--sessions-dir", c.flag)
		}
		for _, a := range [][]string{args, {"promote", "--job-dir", job, "--pi-version", "1"}, {"dump", "--json"}, {"reap", "--json"}} {
			if c.flag != "" && a[0] != "resolve" {
				a = append(a, "--sessions-dir", c.flag)
			}
			if a[0] == "promote" {
				// What pi would leave, had resolve staged anything.
				os.WriteFile(filepath.Join(job, "session", "current.jsonl"), []byte(header), 0o600)
			}
			code, out, errs := runCLI(t, a...)
			if code != exitUsage || out != "" || !strings.Contains(errs, c.name) || strings.Count(errs, "\n") != 1 {
				t.Errorf("%s %q, %s: exit %d, stdout %q, stderr %q; want exit 2, nothing on stdout, one line naming %s", c.name, c.env+c.flag, a[0], code, out, errs, c.name)
			}
		}
		if _, err := os.Lstat(job); err == nil {
			t.Errorf("%s %q: resolve made the job dir", c.name, c.env+c.flag)
		}
	}
	if ents, _ := os.ReadDir(cwd); len(ents) != 0 {
		t.Errorf("the working directory holds %v; want nothing made there", ents)
	}
	if _, err := os.Lstat(real + " "); err == nil {
		t.Errorf("a root %q was made beside the real one", real+" ")
	}
}
