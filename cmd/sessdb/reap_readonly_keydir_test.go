package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// An expired key whose dir its runner may not write in (its own, mode
// 0500) is failed whole by the run, as its dry run fails it: the key dir
// stays at its name, nothing renamed aside; check names its mode, and
// once check --repair gives the owner its bits, the next reap removes the
// key and leaves nothing behind. Before, the run renamed the dir aside
// (the key gone), failed to unlink its transcript, and said "the next
// reap finishes it", which every reap and check --repair after failed the
// same way, the reap-owned dir's mode judged by nothing.
func TestAReapFailsWholeAnExpiredKeyWhoseDirItMayNotWrite(t *testing.T) {
	w := newNobodysWorker(t)
	now := clock
	t.Cleanup(func() { clock = now })
	clock = func() time.Time { return now().Add(-30 * 24 * time.Hour) }
	if _, promoted := w.job("job-1"); !strings.Contains(promoted, `"promoted":true`) {
		t.Fatalf("promote: %s", promoted)
	}
	clock = now
	kd := filepath.Join(w.root, workerKey)
	if err := os.Chmod(kd, 0o500); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		aside, _ := filepath.Glob(filepath.Join(w.root, ".reaped-*"))
		for _, d := range append(aside, kd) {
			os.Chmod(d, 0o700)
		}
	})
	code, out, errs := w.runAs("reap", w.root)
	if code != exitFault || !strings.Contains(out, "failed        "+workerKey+"  (access "+workerKey+": permission denied)") || strings.Contains(out, "gone") {
		t.Errorf("run: exit %d; want 1, the key failed whole on its dir, as its dry run\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if aside, _ := filepath.Glob(filepath.Join(w.root, ".reaped-*")); len(aside) > 0 {
		t.Errorf("the key was renamed aside, its removal refused: %v", aside)
	}
	if st, err := os.Lstat(filepath.Join(kd, "current.jsonl")); err != nil || !st.Mode().IsRegular() {
		t.Fatalf("the key's transcript: %v", err)
	}
	if code, out, errs := w.runAs("check", "--repair", w.root); code != exitOK || !strings.Contains(out, "mode 0500, now 0700") {
		t.Fatalf("check --repair: exit %d; want 0, the key dir given its bits\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	code, out, errs = w.runAs("reap", w.root)
	if code != exitOK || !strings.Contains(out, "removed       "+workerKey+"  (expired key)") {
		t.Errorf("reap after the repair: exit %d; want 0, the key removed\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if names, err := os.ReadDir(w.root); err != nil || len(names) != 0 {
		t.Errorf("left under the root: %v, %v", names, err)
	}
}
