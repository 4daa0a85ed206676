package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// An expired key whose dir is sticky and another user's (root's, mode
// 1777, its files root's too, meta.db 0666 for the reaper's lock), reaped
// by a user that may write in it but not remove another's entries there
// (nobody), is failed whole by the run, as by its dry run, the sticky dir
// named: the key stays at its name. Before, the dry run said it would
// remove the key, exit 0, and the run renamed the dir aside (a rename in
// one parent asks nothing of the dir moved), its transcript's unlink was
// refused (EPERM), and .reaped-<key>-<random> failed every reap after,
// the key gone.
func TestAReapFailsWholeAnExpiredKeyInAnothersStickyDir(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("root is needed to make the key dir another user's")
	}
	w := newNobodysWorker(t)
	now := clock
	t.Cleanup(func() { clock = now })
	clock = func() time.Time { return now().Add(-30 * 24 * time.Hour) }
	if _, promoted := w.job("job-1"); !strings.Contains(promoted, `"promoted":true`) {
		t.Fatalf("promote: %s", promoted)
	}
	clock = now
	kd := filepath.Join(w.root, workerKey)
	entries, _ := os.ReadDir(kd)
	for _, e := range entries {
		p := filepath.Join(kd, e.Name())
		os.Lchown(p, 0, 0)
		if e.Name() == "meta.db" {
			os.Chmod(p, 0o666)
		}
	}
	os.Chown(kd, 0, 0)
	if err := os.Chmod(kd, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"reap", "--dry-run", w.root}, {"reap", w.root}} {
		code, out, errs := w.runAs(args...)
		if code != exitFault || !strings.Contains(out, "failed        "+workerKey) || !strings.Contains(out, "sticky") || strings.Contains(out, "gone") {
			t.Errorf("%v: exit %d; want 1, the key failed whole on its sticky dir\nstdout:\n%s\nstderr:\n%s", args, code, out, errs)
		}
	}
	if aside, _ := filepath.Glob(filepath.Join(w.root, ".reaped-*")); len(aside) > 0 {
		t.Errorf("the key was renamed aside, its removal refused: %v", aside)
	}
	if st, err := os.Lstat(filepath.Join(kd, "current.jsonl")); err != nil || !st.Mode().IsRegular() {
		t.Fatalf("the key's transcript: %v", err)
	}
}
