package main

import (
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sessdb/internal/sample"
	"sessdb/store"
)

// oneKeyRoot is a sessions root holding only the sample's resumable key,
// so that a check of it starts exactly one check process, plus one per
// retry.
func oneKeyRoot(t *testing.T) string {
	t.Helper()
	src := copySample(t)
	root := filepath.Join(t.TempDir(), "one")
	if err := os.MkdirAll(root, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(src, sample.Resumable), filepath.Join(root, sample.Resumable)); err != nil {
		t.Fatal(err)
	}
	return root
}

// childLog sets up the count of the check processes started.
func childLog(t *testing.T) func() int {
	t.Helper()
	p := filepath.Join(t.TempDir(), "children")
	t.Setenv("SESSDB_TEST_CHILD_LOG", p)
	return func() int {
		b, _ := os.ReadFile(p)
		return strings.Count(string(b), "\n")
	}
}

func fileSum(t *testing.T, p string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

func asideFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, store.AsidePrefix+"*"))
	return m
}

// A deep check whose process hangs, stops, is killed or exits proves
// nothing about the file: it is tried once more in a fresh process, then
// reported with its cause, and --repair moves nothing for it (issue 15.5).
func TestCheckRepairNeverMovesOnAFailedDeepCheck(t *testing.T) {
	// A child that dies by itself is given a minute, which only bounds a
	// hang: under -race on a loaded machine its start (the test binary,
	// etcd linked in) took a third of a second, and past the timeout its
	// cause would have been the timeout's. Only the hanging and the
	// stopped child wait it out, and they wait 1 s.
	cases := []struct {
		env, timeout, cause string
	}{
		{"SESSDB_TEST_CHILD_HANG", "1s", "timed out after 1s (the check process was killed)"},
		{"SESSDB_TEST_CHILD_STOP", "1s", "timed out after 1s (the check process was killed)"},
		{"SESSDB_TEST_CHILD_KILL", "1m", "the check process was killed by signal SIGKILL"},
		{"SESSDB_TEST_CHILD_EXIT", "1m", "the check process exited 7"},
		{"SESSDB_TEST_CHILD_BUS", "1m", "the check process exited 2: unexpected fault address"},
	}
	for _, c := range cases {
		t.Run(strings.TrimPrefix(c.env, "SESSDB_TEST_CHILD_"), func(t *testing.T) {
			atSampleTime(t)
			root := oneKeyRoot(t)
			children := childLog(t)
			t.Setenv(c.env, sample.Resumable)
			dbPath := filepath.Join(root, sample.Resumable, "meta.db")
			before := fileSum(t, dbPath)
			code, out, errs := runCLI(t, "check", "--repair", "--deep-check-timeout", c.timeout, root)
			if code != exitIssues {
				t.Fatalf("exit %d, want 3 (the check could not be done)\n%s%s", code, out, errs)
			}
			want := "problem  " + sample.Resumable + "/meta.db: meta-check-failed: bbolt's consistency check did not complete: " + c.cause
			if !strings.Contains(out, want) || !strings.Contains(out, "tried again in a fresh check process: "+c.cause) {
				t.Errorf("no line %q, retried, in\n%s", want, out)
			}
			if !strings.Contains(out, "repair: left as is: a check that did not complete proves nothing") {
				t.Errorf("the repair line does not say why nothing was done:\n%s", out)
			}
			if fileSum(t, dbPath) != before || len(asideFiles(t, filepath.Join(root, sample.Resumable))) != 0 {
				t.Fatal("meta.db was moved or changed on a check that did not complete")
			}
			if n := children(); n != 2 {
				t.Errorf("%d check processes started, want 2 (one, and one retry)", n)
			}
			if n := childrenOf(t, os.Getpid()); n != 0 {
				t.Errorf("%d check processes outlived check", n)
			}
		})
	}
}

// A check process that fails once and succeeds on the retry leaves no
// finding: the retry's verdict is the verdict.
func TestCheckRetriesAFailedDeepCheckOnce(t *testing.T) {
	atSampleTime(t)
	root := oneKeyRoot(t)
	children := childLog(t)
	t.Setenv("SESSDB_TEST_CHILD_EXIT", sample.Resumable)
	t.Setenv("SESSDB_TEST_CHILD_ONCE", filepath.Join(t.TempDir(), "once"))
	code, out, errs := runCLI(t, "check", root)
	if code != exitOK || strings.Contains(out, "meta-check-failed") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	if n := children(); n != 2 {
		t.Fatalf("%d check processes started, want 2", n)
	}
}

// A check process that ran to completion and found damage is proof: the
// repair moves the file aside, after rolling forward the promotion the
// file had committed, so the key keeps the transcript it committed.
func TestCheckRepairRollsForwardBeforeMovingAside(t *testing.T) {
	atSampleTime(t)
	root := copySample(t)
	pendingPromotion(t, root, sample.Resumable)
	t.Setenv("SESSDB_TEST_CHILD_DAMAGE", sample.Resumable)
	code, out, errs := runCLI(t, "check", "--repair", root)
	if code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	for _, want := range []string{
		sample.Resumable + "/meta.db: meta-check-failed: bbolt's consistency check: injected: page 7",
		"repair: rolled forward: the temp was renamed over current.jsonl",
		"repair: moved meta.db aside to meta.db.damaged-",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	b, err := os.ReadFile(filepath.Join(root, sample.Resumable, "current.jsonl"))
	if err != nil || !strings.HasSuffix(string(b), `{"type":"message","id":"abc"}`+"\n") {
		t.Fatalf("current.jsonl is not the committed promotion's transcript (%v):\n%s", err, b)
	}
}

// A pending promotion on a key whose deep check hangs is rolled forward,
// and nothing is moved: the key resumes the committed promotion.
func TestCheckRepairRollsForwardDespiteAHangingDeepCheck(t *testing.T) {
	atSampleTime(t)
	root := copySample(t)
	pendingPromotion(t, root, sample.Resumable)
	t.Setenv("SESSDB_TEST_CHILD_HANG", sample.Resumable)
	code, out, errs := runCLI(t, "check", "--repair", "--deep-check-timeout", "1s", root)
	if code != exitIssues || !strings.Contains(out, "repair: rolled forward") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	if len(asideFiles(t, filepath.Join(root, sample.Resumable))) != 0 {
		t.Fatalf("meta.db moved aside on a check that timed out:\n%s", out)
	}
	s, err := store.New(root, store.Options{Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	jobDir := t.TempDir()
	sess, err := s.Resolve(sample.Resumable, store.Job{PiVersion: "0.58.3", Venue: "local"}, jobDir)
	if err != nil || !sess.Resume || sess.Gen() != 3 {
		t.Fatalf("after the repair: %+v, %v; want gen 3 resumed", sess, err)
	}
}

// Ctrl-C or SIGTERM during a deep check that hangs ends it at once: the
// check process is killed, no retry is started, and check exits 130
// without waiting out --deep-check-timeout (issue 15.6).
func TestCheckInterruptStopsAHangingDeepCheck(t *testing.T) {
	atSampleTime(t)
	root := oneKeyRoot(t)
	children := childLog(t)
	t.Setenv("SESSDB_TEST_CHILD_HANG", sample.Resumable)
	interruptOnceAChildStarts(t, children)
	code, out, errs := runCLI(t, "check", "--deep-check-timeout", "10m", root)
	if code != exitInterrupted || !strings.Contains(out, "(interrupted)") {
		t.Fatalf("exit %d, want 130\n%s%s", code, out, errs)
	}
	if n := children(); n != 1 {
		t.Errorf("%d check processes started, want 1: an interrupt is no failure to retry", n)
	}
	if n := childrenOf(t, os.Getpid()); n != 0 {
		t.Errorf("%d check processes outlived check", n)
	}
}

// interruptOnceAChildStarts has the next command's interrupt context end
// as soon as children counts a check process started: Ctrl-C with one
// running.
func interruptOnceAChildStarts(t *testing.T, children func() int) {
	prev := interruptContext
	t.Cleanup(func() { interruptContext = prev })
	interruptContext = func() (context.Context, context.CancelFunc) {
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			for children() == 0 && ctx.Err() == nil {
				time.Sleep(10 * time.Millisecond)
			}
			cancel()
		}()
		return ctx, cancel
	}
}
