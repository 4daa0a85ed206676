package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"sessdb/store"
)

// What an operator does as root on a worker's sessions root (a job run as
// root, a migration either way) leaves the key the worker's: its next job
// resumes. Before, each left files root owned, mode 0600: the worker's
// resolve exited 1 after a promote or a migration to meta.db, and after
// --to-legacy the key cold-started (venue-changed: a sidecar it could not
// read), while check said nothing. A key an older sessdb so left is
// named by check run as root (owner, exit 3), which --repair leaves to the
// operator's chown (a worker could have put another user's file there).
func TestWhatRootDoesInAWorkersRootLeavesItTheWorkers(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("runs as root, with a worker that is not: run as root to test it")
	}
	w := newNobodysWorker(t)
	if _, promoted := w.job("job-1"); !strings.Contains(promoted, `"promoted":true`) {
		t.Fatalf("the worker's first job: %s", promoted)
	}
	asRoot := func(args ...string) string {
		t.Helper()
		code, out, errs := runCLI(t, args...)
		if code != 0 {
			t.Fatalf("as root, %v: exit %d\n%s\n%s", args, code, out, errs)
		}
		return out
	}
	resumes := func(after, job string) {
		t.Helper()
		if resolved, promoted := w.job(job); !strings.Contains(resolved, `"resume":true`) || !strings.Contains(promoted, `"promoted":true`) {
			t.Fatalf("the worker's job after %s: %s%s", after, resolved, promoted)
		}
	}
	rootJob := filepath.Join(t.TempDir(), "root-job")
	asRoot("resolve", "--sessions-dir", w.root, "--key", workerKey, "--job-dir", rootJob, "--pi-version", "0.58.3")
	staged := filepath.Join(rootJob, "session", "current.jsonl")
	data, err := os.ReadFile(staged)
	if err != nil || len(data) == 0 {
		t.Fatalf("root's job was staged nothing to resume: %v", err)
	}
	data = append(data, `{"type":"message","id":"root","parentId":null,"timestamp":"2026-11-01T00:00:01.000Z","message":{"role":"user","content":"hi"}}`+"\n"...)
	if err := os.WriteFile(staged, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if out := asRoot("promote", "--sessions-dir", w.root, "--job-dir", rootJob, "--pi-version", "0.58.3"); !strings.Contains(out, `"promoted":true`) {
		t.Fatalf("root's promote: %s", out)
	}
	resumes("root's promote", "job-2")
	asRoot("migrate", "--to-legacy", w.root)
	resumes("root's migrate --to-legacy", "job-3")
	asRoot("migrate", "--to-legacy", w.root)
	asRoot("migrate", w.root)
	resumes("root's migrate back to meta.db", "job-4")

	// As an older sessdb left it.
	if out, err := exec.Command("chown", "-R", "0:0", filepath.Join(w.root, workerKey)).CombinedOutput(); err != nil {
		t.Fatalf("chown: %v\n%s", err, out)
	}
	code, out, errs := runCLI(t, "check", w.root)
	if code != exitIssues || strings.Count(out, ": owner: owned by uid 0") != 3 {
		t.Fatalf("check as root: exit %d, want %d and three owner findings\n%s\n%s", code, exitIssues, out, errs)
	}
	// check --repair gives no file away: the worker could have put
	// another user's file at a key's name.
	code, out, errs = runCLI(t, "check", "--repair", w.root)
	if code != exitIssues || strings.Count(out, "left as is: check --repair gives no file away") != 3 {
		t.Fatalf("check --repair as root: exit %d, want %d, the three left\n%s\n%s", code, exitIssues, out, errs)
	}
	// The operator's chown, as the finding says.
	if out, err := exec.Command("chown", "-R", "65534:65534", filepath.Join(w.root, workerKey)).CombinedOutput(); err != nil {
		t.Fatalf("chown: %v\n%s", err, out)
	}
	asRoot("check", w.root)
	resumes("the operator's chown", "job-5")
}

// A job dir's parent its worker may write and search but not read (a
// drop box, mode 0333) holds the job dir resolve makes, as the system
// allows: resolve opened the parent to read it, and failed (exit 1,
// "mkdir …: permission denied") for a worker that is not root.
func TestAJobDirInAParentItsWorkerMayNotReadIsMade(t *testing.T) {
	w := newNobodysWorker(t)
	drop := filepath.Join(w.base, "drop")
	if err := os.Mkdir(drop, 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chown(drop, nobody, nobody)
	if err := os.Chmod(drop, 0o333); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(drop, 0o700) })
	code, out, errs := w.runAs("resolve", "--sessions-dir", w.root, "--key", workerKey, "--job-dir", filepath.Join(drop, "job"), "--pi-version", "0.58.3")
	if code != 0 || !strings.Contains(out, `"reason":"absent"`) {
		t.Fatalf("resolve into a write-and-search-only parent: exit %d\n%s\n%s", code, out, errs)
	}
}

// A meta.db its owner may not read (mode 0000) failed the key's open, and
// check, run as that owner, said only "unreadable … look at the disk",
// and --repair mended nothing: every resolve of the key exited 1. check
// names its mode, --repair gives the owner its bits back, and the
// worker's next job resumes.
func TestCheckAsTheOwnerMendsAMetaDBItMayNotRead(t *testing.T) {
	w := newNobodysWorker(t)
	if _, promoted := w.job("job-1"); !strings.Contains(promoted, `"promoted":true`) {
		t.Fatalf("first promote: %s", promoted)
	}
	if err := os.Chmod(filepath.Join(w.root, workerKey, "meta.db"), 0); err != nil {
		t.Fatal(err)
	}
	code, out, errs := w.runAs("check", w.root)
	if code == 0 || !strings.Contains(out, workerKey+"/meta.db: mode: mode 0000: its owner may not read or write the meta.db") {
		t.Fatalf("check as the owner: exit %d\n%s\n%s", code, out, errs)
	}
	if code, out, errs := w.runAs("check", "--repair", w.root); code != 0 || !strings.Contains(out, "gave its owner the bits it lacked: mode 0000, now 0600") {
		t.Fatalf("check --repair as the owner: exit %d\n%s\n%s", code, out, errs)
	}
	if resolved, promoted := w.job("job-2"); !strings.Contains(resolved, `"resume":true`) || !strings.Contains(promoted, `"promoted":true`) {
		t.Fatalf("the job after the repair: %s%s", resolved, promoted)
	}
}

// A sessions root its owner may not list (0300) or enter (0600) stopped
// check run as that owner at its open ("permission denied", exit 1), and
// --repair mended nothing (ownrev3): check names the mode in that error
// and the way out, and check --repair, through a descriptor that needs
// neither bit (Linux), gives the bits back and checks the root.
func TestCheckAsTheOwnerMendsARootItMayNotList(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("a directory its caller may not read opens for its mode only with O_PATH (Linux)")
	}
	for _, mode := range []os.FileMode{0o300, 0o600} {
		t.Run(fmt.Sprintf("%04o", mode), func(t *testing.T) {
			w := newNobodysWorker(t)
			if _, promoted := w.job("job-1"); !strings.Contains(promoted, `"promoted":true`) {
				t.Fatalf("first promote: %s", promoted)
			}
			if err := os.Chmod(w.root, mode); err != nil {
				t.Fatal(err)
			}
			code, out, errs := w.runAs("check", w.root)
			if want := fmt.Sprintf("permission denied: mode %04o: its owner may not", mode); code != exitFault || !strings.Contains(errs, want) || !strings.Contains(errs, "check --repair gives its owner the bits back") {
				t.Fatalf("check as the owner: exit %d, want %d and %q on stderr\n%s\n%s", code, exitFault, want, out, errs)
			}
			code, out, errs = w.runAs("check", "--repair", w.root)
			if want := fmt.Sprintf("gave its owner the bits it lacked: mode %04o, now 0700", mode); code != exitOK || !strings.Contains(out, ".: mode: ") || !strings.Contains(out, want) || !strings.Contains(out, "1 key") {
				t.Fatalf("check --repair as the owner: exit %d, want %d, the root's finding, %q and the key checked\n%s\n%s", code, exitOK, want, out, errs)
			}
			if resolved, promoted := w.job("job-2"); !strings.Contains(resolved, `"resume":true`) || !strings.Contains(promoted, `"promoted":true`) {
				t.Fatalf("the job after the repair: %s%s", resolved, promoted)
			}
		})
	}
}

// A fleet's transcripts dir its owner may not list or enter, or a mark it
// may not read, stopped check run as that owner at the claim ("permission
// denied", exit 1), and --repair mended nothing (ownrev3): check names
// the mode in that error and the way out, and check --repair gives the
// bits back, the dir's before the mark's, and checks the fleet.
func TestFleetCheckAsTheOwnerMendsADirAndMarkItMayNotRead(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("a directory its caller may not read opens for its mode only with O_PATH (Linux)")
	}
	for _, c := range []struct{ dir, mark os.FileMode }{{0o300, 0o200}, {0o600, 0o600}, {0o700, 0o200}, {0o600, 0o200}} {
		t.Run(fmt.Sprintf("dir %04o mark %04o", c.dir, c.mark), func(t *testing.T) {
			_, dir, runAs := nobodysFleet(t)
			if code, out, errs := runAs("check", "--repair"); code != exitOK {
				t.Fatalf("the first check --repair, which marks the dir: exit %d\n%s%s", code, out, errs)
			}
			mark := filepath.Join(dir, ".sessdb-fleet")
			if err := os.Chmod(mark, c.mark); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dir, c.dir); err != nil {
				t.Fatal(err)
			}
			// What the owner lacks: the dir's search bit hides nothing of
			// the mark's mode before the repair unless it lacks x.
			lacking := map[string]os.FileMode{}
			if c.dir&0o700 != 0o700 {
				lacking["."] = c.dir
			}
			if c.mark&0o400 == 0 {
				lacking[".sessdb-fleet"] = c.mark
			}
			code, out, errs := runAs("check")
			if code != exitFault || !strings.Contains(errs, "permission denied: ") || !strings.Contains(errs, "(check --repair gives its owner the bits back)") {
				t.Fatalf("check as the owner: exit %d, want %d, the error and the way out on stderr\n%s\n%s", code, exitFault, out, errs)
			}
			for path, was := range lacking {
				if path == ".sessdb-fleet" && c.dir&0o100 == 0 {
					continue // not seen through a dir that cannot be entered
				}
				if want := fmt.Sprintf("%s: mode %04o: its owner may not", path, was); !strings.Contains(errs, want) {
					t.Errorf("check as the owner did not name %q\n%s", want, errs)
				}
			}
			code, out, errs = runAs("check", "--repair")
			if code != exitOK || strings.Contains(out, "not repaired") {
				t.Fatalf("check --repair as the owner: exit %d, want %d\n%s\n%s", code, exitOK, out, errs)
			}
			for path, was := range lacking {
				if want := fmt.Sprintf("%s: mode: mode %04o", path, was); !strings.Contains(out, want) {
					t.Errorf("check --repair as the owner did not name %q\n%s", want, out)
				}
			}
			for path, want := range map[string]os.FileMode{dir: c.dir | 0o700, mark: c.mark | 0o400} {
				if st, err := os.Stat(path); err != nil || st.Mode().Perm() != want {
					t.Errorf("%s after check --repair: %v, %v; want mode %04o", path, st.Mode().Perm(), err, want)
				}
			}
			if code, out, errs := runAs("check"); code != exitOK {
				t.Fatalf("check after the repair: exit %d\n%s%s", code, out, errs)
			}
		})
	}
}

// A key dir its owner may not enter (0600) hid its files' modes: check
// --repair run as the owner gave the key dir its bits, and found a
// meta.db 0000 (or a fleet's generation 0200) only in the look after,
// where it was left for another run (ownrev3: two runs for a sessions
// root, three for a fleet, the last one's summary counting an unreadable
// it had just cured). One run now mends both, and says so.
func TestCheckAsTheOwnerMendsAKeyDirAndWhatItHidInOneRun(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs a user that is not root, for whom a mode is binding (newNobodysWorker runs as nobody on Linux)")
	}
	// The key dir its owner may not enter (0600), or only its meta.db
	// (mutcheck: a meta.db 0000 in a key dir the owner enters hid the
	// temp's judgement too, and the temp was left, exit 3).
	for _, keyMode := range []os.FileMode{0o600, 0o700} {
		t.Run(fmt.Sprintf("sessions root, key dir %04o", keyMode), func(t *testing.T) { ownerMendsAKeyDirAndWhatItHid(t, keyMode) })
	}
	t.Run("fleet", func(t *testing.T) {
		f, dir, runAs := nobodysFleet(t)
		key := store.Key("github", "acme/widget", "pi/hidden")
		f.run(t, key, "job-1") // as root: what it makes is the dir owner's
		gens, _ := filepath.Glob(filepath.Join(dir, key, "*.jsonl"))
		if len(gens) != 1 {
			t.Fatalf("generations after one promotion: %v", gens)
		}
		if err := os.Chmod(gens[0], 0o200); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(dir, key), 0o600); err != nil {
			t.Fatal(err)
		}
		code, out, errs := runAs("check", "--repair")
		if code != exitOK || !strings.Contains(out, "gave its owner the bits it lacked: mode 0600, now 0700") || !strings.Contains(out, "gave its owner the bits it lacked: mode 0200, now 0600") || !strings.Contains(out, "0 problems remaining") {
			t.Fatalf("check --repair as the owner: exit %d, want %d, the key dir and its generation mended, none remaining\n%s\n%s", code, exitOK, out, errs)
		}
		if code, out, errs := runAs("check"); code != exitOK {
			t.Fatalf("check after the repair: exit %d\n%s%s", code, out, errs)
		}
	})
}

func ownerMendsAKeyDirAndWhatItHid(t *testing.T, keyMode os.FileMode) {
	w := newNobodysWorker(t)
	if _, promoted := w.job("job-1"); !strings.Contains(promoted, `"promoted":true`) {
		t.Fatalf("first promote: %s", promoted)
	}
	key := filepath.Join(w.root, workerKey)
	if err := os.Chmod(filepath.Join(key, "meta.db"), 0); err != nil {
		t.Fatal(err)
	}
	// A promotion's temp no writer holds, two hours old (ownrev4:
	// found, and left for the next run, behind the key dir).
	stray := filepath.Join(key, ".current.jsonl.tmp-abcdef")
	if err := os.WriteFile(stray, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(stray, old, old); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(stray, nobody, nobody); err != nil && os.Geteuid() == 0 {
		t.Fatal(err)
	}
	if err := os.Chmod(key, keyMode); err != nil {
		t.Fatal(err)
	}
	code, out, errs := w.runAs("check", "--repair", w.root)
	keyMended := strings.Contains(out, "gave its owner the bits it lacked: mode 0600, now 0700")
	if code != exitOK || keyMended != (keyMode == 0o600) || !strings.Contains(out, "gave its owner the bits it lacked: mode 0000, now 0600") || !strings.Contains(out, "0 problems remaining") {
		t.Fatalf("check --repair as the owner: exit %d, want %d, the key dir (if it lacked bits) and its meta.db mended, none remaining\n%s\n%s", code, exitOK, out, errs)
	}
	if _, err := os.Lstat(stray); !os.IsNotExist(err) {
		t.Fatalf("the stray temp the key dir or its meta.db hid: %v; want it removed in the same run\n%s", err, out)
	}
	if resolved, promoted := w.job("job-2"); !strings.Contains(resolved, `"resume":true`) || !strings.Contains(promoted, `"promoted":true`) {
		t.Fatalf("the job after the repair: %s%s", resolved, promoted)
	}
}

// Behind a key dir its owner may not enter, a meta.db it may not read,
// and behind that, damage (a meta.db cut to 0 bytes): check --repair run
// as the owner mends the key dir, then the meta.db's mode, then moves the
// damaged file aside, in one run, each found by the look after the
// repair before it. The damage is found at the path whose mode was
// mended: it is hidden all the same, as another kind at that path
// (mutcheck: with the kind not compared, it was left for the next run).
func TestCheckAsTheOwnerRepairsDamageBehindTwoModesInOneRun(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs a user that is not root, for whom a mode is binding (newNobodysWorker runs as nobody on Linux)")
	}
	w := newNobodysWorker(t)
	if _, promoted := w.job("job-1"); !strings.Contains(promoted, `"promoted":true`) {
		t.Fatalf("first promote: %s", promoted)
	}
	key := filepath.Join(w.root, workerKey)
	metaDB := filepath.Join(key, "meta.db")
	if err := os.Truncate(metaDB, 0); err != nil {
		t.Fatal(err)
	}
	for p, mode := range map[string]os.FileMode{metaDB: 0, key: 0o600} {
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errs := w.runAs("check", "--repair", w.root)
	for _, want := range []string{"mode 0600, now 0700", "mode 0000, now 0600", "moved meta.db aside", "0 problems remaining"} {
		if !strings.Contains(out, want) {
			t.Fatalf("check --repair as the owner: exit %d; want %q in its report\n%s\n%s", code, want, out, errs)
		}
	}
	if code != exitOK {
		t.Fatalf("check --repair as the owner: exit %d, want %d\n%s\n%s", code, exitOK, out, errs)
	}
	if code, out, errs := w.runAs("check", w.root); code != exitOK {
		t.Fatalf("check after the repair: exit %d\n%s%s", code, out, errs)
	}
}

// nobodysFleet starts a fleet whose transcripts dir nobody owns (the
// environment points at it), and returns it, the dir, and a runner of
// the CLI as nobody (as the current user where that is not root).
func nobodysFleet(t *testing.T) (*testFleet, string, func(args ...string) (int, string, string)) {
	t.Helper()
	f := startFleet(t)
	base, err := os.MkdirTemp("", "sessdb-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	dir := filepath.Join(base, "transcripts")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	runAs := unprivileged(t, base, func() { os.Chown(base, nobody, nobody); os.Chown(dir, nobody, nobody) })
	t.Setenv("PI_SESSIONS_TRANSCRIPTS_DIR", dir)
	return f, dir, runAs
}

// A transcripts dir its owner may not enter, mended by check --repair run
// as that owner, whose mark then proves not to be one (a FIFO at its
// name): the claim's refusal stops the check, and says what was mended
// on the way, where before it said nothing of it (ownrev4).
func TestFleetCheckNamesWhatItMendedBeforeTheClaimRefused(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("a directory its caller may not read opens for its mode only with O_PATH (Linux)")
	}
	_, dir, runAs := nobodysFleet(t)
	if code, out, errs := runAs("check", "--repair"); code != exitOK {
		t.Fatalf("the first check --repair, which marks the dir: exit %d\n%s%s", code, out, errs)
	}
	mark := filepath.Join(dir, ".sessdb-fleet")
	if err := os.Remove(mark); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(mark, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(mark, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runAs("check", "--repair")
	if code == exitOK || !strings.Contains(errs, "not a regular file") || !strings.Contains(errs, ".: mode 0600: its owner may not enter") || !strings.Contains(errs, "gave its owner the bits it lacked: mode 0600, now 0700") {
		t.Fatalf("check --repair as the owner: exit %d; want it stopped by the mark, naming the dir's mode mended\n%s\n%s", code, out, errs)
	}
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("the dir after the check: %v, %v; want 0700", st.Mode().Perm(), err)
	}
}
