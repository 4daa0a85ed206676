package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A worker whose umask takes the owner's own bits (0777 here; 0177 takes
// a directory's x, 0277 a file's w) loses nothing to it: a cold start, its
// promotion and the next job's resume go as under any umask, and check
// finds nothing wrong. sessdb's files and directories are 0600 and 0700
// whatever the umask. Run as a user the modes stop (as root, as nobody):
// a resolve failed at once (exit 1, the job dir it had made mode 0
// unopenable), and a promote failed (promote-failed) leaving a key dir
// mode 0 that every later resolve of the key failed on, exit 1, until an
// operator chmodded it.
func TestAUmaskThatTakesTheOwnersBitsLosesNothing(t *testing.T) {
	clearEnv(t)
	base, err := os.MkdirTemp("", "sessdb-umask-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	runAs := unprivileged(t, base, func() { os.Chown(base, nobody, nobody) })
	root := filepath.Join(base, "sessions")
	const key = "0123456789abcdef0123456789abcdef"
	resolve := func(job string) (int, string, string) {
		return runAs("resolve", "--sessions-dir", root, "--key", key, "--job-dir", filepath.Join(base, job), "--pi-version", "0.58.3")
	}

	old := syscall.Umask(0o777)
	defer syscall.Umask(old)
	code, out, errs := resolve("job-1")
	if code != 0 || !strings.Contains(out, `"reason":"absent"`) {
		t.Fatalf("cold resolve: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	staged := filepath.Join(base, "job-1", "session", "current.jsonl")
	if err := os.WriteFile(staged, []byte(header+`{"type":"message","id":"m1","parentId":null,"timestamp":"2026-11-01T00:00:01.000Z","message":{"role":"user","content":"hi"}}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs = runAs("promote", "--sessions-dir", root, "--job-dir", filepath.Join(base, "job-1"), "--pi-version", "0.58.3")
	if code != 0 || !strings.Contains(out, `"promoted":true`) {
		t.Fatalf("promote: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	code, out, errs = resolve("job-2")
	if code != 0 || !strings.Contains(out, `"resume":true`) {
		t.Fatalf("the next job's resolve: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	code, out, errs = runAs("check", root)
	if code != 0 {
		t.Fatalf("check: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
}

// A key dir an older sessdb made under such a umask (here by chmod: 0500,
// its meta.db 0400) took every promotion of the key from a worker that is
// not root (promote-failed), while check said nothing: check names it
// (mode, exit 3), and check --repair gives the owner its bits back, after
// which the worker's promotion lands.
func TestCheckRepairGivesAWorkerItsKeyBack(t *testing.T) {
	clearEnv(t)
	base, err := os.MkdirTemp("", "sessdb-mode-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	runAs := unprivileged(t, base, func() { os.Chown(base, nobody, nobody) })
	root := filepath.Join(base, "sessions")
	const key = "0123456789abcdef0123456789abcdef"
	job := func(n string) (int, string, string) {
		dir := filepath.Join(base, n)
		if code, out, errs := runAs("resolve", "--sessions-dir", root, "--key", key, "--job-dir", dir, "--pi-version", "0.58.3"); code != 0 {
			t.Fatalf("resolve %s: exit %d\n%s\n%s", n, code, out, errs)
		}
		staged := filepath.Join(dir, "session", "current.jsonl")
		data, _ := os.ReadFile(staged)
		if len(data) == 0 {
			data = []byte(header)
		}
		data = append(data, `{"type":"message","id":"`+n+`","parentId":null,"timestamp":"2026-11-01T00:00:01.000Z","message":{"role":"user","content":"hi"}}`+"\n"...)
		if err := os.WriteFile(staged, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return runAs("promote", "--sessions-dir", root, "--job-dir", dir, "--pi-version", "0.58.3")
	}
	if code, out, errs := job("job-1"); code != 0 || !strings.Contains(out, `"promoted":true`) {
		t.Fatalf("first promote: exit %d\n%s\n%s", code, out, errs)
	}
	os.Chmod(filepath.Join(root, key, "meta.db"), 0o400)
	os.Chmod(filepath.Join(root, key), 0o500)
	if code, out, _ := job("job-2"); code != 0 || !strings.Contains(out, `"reason":"promote-failed"`) {
		t.Fatalf("promote onto a key dir 0500: exit %d\n%s; want promote-failed", code, out)
	}
	code, out, errs := runAs("check", root)
	if code != exitIssues || strings.Count(out, ": mode: ") != 2 {
		t.Fatalf("check: exit %d, want %d and two mode findings\n%s\n%s", code, exitIssues, out, errs)
	}
	if code, out, errs := runAs("check", "--repair", root); code != 0 || strings.Count(out, "gave its owner the bits it lacked") != 2 {
		t.Fatalf("check --repair: exit %d\n%s\n%s", code, out, errs)
	}
	if code, out, errs := job("job-3"); code != 0 || !strings.Contains(out, `"promoted":true`) {
		t.Fatalf("promote after the repair: exit %d\n%s\n%s", code, out, errs)
	}
}

// The process leaves the owner's bits out of its umask (main, and this
// test binary as sessdb): under umask 0777 the one file a user names,
// engage --svg's chart, is 0600, the group's and others' bits still the
// umask's; it was mode 0, which its owner could not open. What the store
// makes does not depend on it (fsat gives each creation its bits), but a
// kill between a mkdir and its chmod, or a kernel without fchmodat2, does.
func TestTheProcessUmaskKeepsTheOwnersBits(t *testing.T) {
	path := engageFixture(t, "10-sticky-engagement.jsonl")
	for mask, want := range map[int]os.FileMode{0o777: 0o600, 0o027: 0o640, 0o002: 0o664} {
		chart := filepath.Join(t.TempDir(), "chart.svg")
		cmd := exec.Command(os.Args[0], "engage", "replay", "--svg", chart, path)
		cmd.Env = append(os.Environ(), cliChildEnv+"=1", "GORACE=atexit_sleep_ms=0")
		old := syscall.Umask(mask)
		out, err := cmd.CombinedOutput()
		syscall.Umask(old)
		if err != nil {
			t.Fatalf("umask %03o: %v\n%s", mask, err, out)
		}
		if st, err := os.Stat(chart); err != nil || st.Mode().Perm() != want {
			t.Errorf("umask %03o: chart %v, %v; want mode %v", mask, st.Mode().Perm(), err, want)
		}
	}
}
