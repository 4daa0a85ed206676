package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"sessdb/internal/fsat"
)

// The look that refuses a password variable naming a file looks up no
// name in an automounted dir: a password like /net/host/x, stat'ed, sent
// host (part of the secret) to the automounter, which resolved and
// mounted it. A value through such a dir (here a dir the test marks as
// one, fsat.TestHookAutomountDir) is taken as the password, though a
// file is there; one beside it is still refused. Before, os.Stat looked
// it up and the value was refused as a file's name (exit 2).
func TestAPasswordVariableIsNotLookedUpInAnAutomountedDir(t *testing.T) {
	dir := t.TempDir()
	base := t.TempDir()
	auto := filepath.Join(base, "net")
	if err := os.MkdirAll(filepath.Join(auto, "host"), 0o700); err != nil {
		t.Fatal(err)
	}
	inAuto := filepath.Join(auto, "host", "x")
	beside := filepath.Join(base, "x")
	for _, f := range []string{inAuto, beside} {
		if err := os.WriteFile(f, []byte(fleetSecret+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var want unix.Stat_t
	if err := unix.Stat(auto, &want); err != nil {
		t.Fatal(err)
	}
	asked := 0
	fsat.TestHookAutomountDir = func(fd int) bool {
		var st unix.Stat_t
		asked++
		return unix.Fstat(fd, &st) == nil && st.Dev == want.Dev && st.Ino == want.Ino
	}
	t.Cleanup(func() { fsat.TestHookAutomountDir = nil })
	key := strings.Repeat("a", 32)
	for _, c := range []struct {
		password string
		refused  bool
	}{
		{inAuto, false},
		{beside, true},
	} {
		clearEnv(t)
		t.Setenv("PI_SESSIONS_ETCD_ENDPOINTS", "http://127.0.0.1:1")
		t.Setenv("PI_SESSIONS_TRANSCRIPTS_DIR", dir)
		t.Setenv("PI_SESSIONS_ETCD_USER", "sessdb")
		t.Setenv("PI_SESSIONS_ETCD_PASSWORD", c.password)
		t.Setenv("PI_SESSIONS_ETCD_TIMEOUT", "200ms")
		code, _, errs := runCLI(t, "resolve", "--key", key, "--job-dir", filepath.Join(t.TempDir(), "job"), "--pi-version", "1", "--log-format", "console")
		if named := strings.Contains(errs, "holds the name of a file"); code == exitUsage != c.refused || named != c.refused {
			t.Errorf("PI_SESSIONS_ETCD_PASSWORD=%q: exit %d, stderr %q; want refused as a file's name: %v", c.password, code, errs, c.refused)
		}
	}
	if asked == 0 {
		t.Error("the look never asked whether a dir is automounted")
	}
}
