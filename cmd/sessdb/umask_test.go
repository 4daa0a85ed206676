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
	w := newNobodysWorker(t)
	old := syscall.Umask(0o777)
	defer syscall.Umask(old)
	if resolved, promoted := w.job("job-1"); !strings.Contains(resolved, `"reason":"absent"`) || !strings.Contains(promoted, `"promoted":true`) {
		t.Fatalf("a cold job: %s%s", resolved, promoted)
	}
	if resolved, _ := w.job("job-2"); !strings.Contains(resolved, `"resume":true`) {
		t.Fatalf("the next job's resolve: %s", resolved)
	}
	if code, out, errs := w.runAs("check", w.root); code != 0 {
		t.Fatalf("check: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
}

// nobodysWorker is a sessions root in a base dir a user the modes stop
// owns (unprivileged: as root, nobody), and sessdb run there as that
// user.
type nobodysWorker struct {
	t          *testing.T
	base, root string
	runAs      func(args ...string) (int, string, string)
}

// workerKey is the key nobodysWorker's jobs resolve and promote.
const workerKey = "0123456789abcdef0123456789abcdef"

func newNobodysWorker(t *testing.T) nobodysWorker {
	t.Helper()
	clearEnv(t)
	base, err := os.MkdirTemp("", "sessdb-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	runAs := unprivileged(t, base, func() { os.Chown(base, nobody, nobody) })
	return nobodysWorker{t: t, base: base, root: filepath.Join(base, "sessions"), runAs: runAs}
}

// job is one job of workerKey in the job dir base/name: resolve, one
// message more than was staged, promote. It returns the stdout of each;
// a resolve that fails fails the test, a promote's outcome is the
// caller's to judge.
func (w nobodysWorker) job(name string) (resolved, promoted string) {
	t := w.t
	dir := filepath.Join(w.base, name)
	code, resolved, errs := w.runAs("resolve", "--sessions-dir", w.root, "--key", workerKey, "--job-dir", dir, "--pi-version", "0.58.3")
	if code != 0 {
		t.Fatalf("resolve %s: exit %d\n%s\n%s", name, code, resolved, errs)
	}
	staged := filepath.Join(dir, "session", "current.jsonl")
	data, _ := os.ReadFile(staged)
	if len(data) == 0 {
		data = []byte(header)
	}
	data = append(data, `{"type":"message","id":"`+name+`","parentId":null,"timestamp":"2026-11-01T00:00:01.000Z","message":{"role":"user","content":"hi"}}`+"\n"...)
	if err := os.WriteFile(staged, data, 0o600); err != nil {
		t.Fatal(err)
	}
	_, promoted, _ = w.runAs("promote", "--sessions-dir", w.root, "--job-dir", dir, "--pi-version", "0.58.3")
	return resolved, promoted
}

// A key dir an older sessdb made under such a umask (here by chmod: 0500,
// its meta.db 0400) took every promotion of the key from a worker that is
// not root (promote-failed), while check said nothing: check names it
// (mode, exit 3), and check --repair gives the owner its bits back, after
// which the worker's promotion lands.
func TestCheckRepairGivesAWorkerItsKeyBack(t *testing.T) {
	w := newNobodysWorker(t)
	if _, promoted := w.job("job-1"); !strings.Contains(promoted, `"promoted":true`) {
		t.Fatalf("first promote: %s", promoted)
	}
	os.Chmod(filepath.Join(w.root, workerKey, "meta.db"), 0o400)
	os.Chmod(filepath.Join(w.root, workerKey), 0o500)
	if _, promoted := w.job("job-2"); !strings.Contains(promoted, `"reason":"promote-failed"`) {
		t.Fatalf("promote onto a key dir 0500: %s; want promote-failed", promoted)
	}
	code, out, errs := w.runAs("check", w.root)
	if code != exitIssues || strings.Count(out, ": mode: ") != 2 {
		t.Fatalf("check: exit %d, want %d and two mode findings\n%s\n%s", code, exitIssues, out, errs)
	}
	if code, out, errs := w.runAs("check", "--repair", w.root); code != 0 || strings.Count(out, "gave its owner the bits it lacked") != 2 {
		t.Fatalf("check --repair: exit %d\n%s\n%s", code, out, errs)
	}
	if _, promoted := w.job("job-3"); !strings.Contains(promoted, `"promoted":true`) {
		t.Fatalf("promote after the repair: %s", promoted)
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
		cmd.Env = append(os.Environ(), cliChildEnv+"=1")
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
