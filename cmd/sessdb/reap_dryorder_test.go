package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A legacy key (no meta.db) that has expired is locked by a meta.db its
// run makes in the key dir, before it renames the dir under the root:
// where neither the key dir nor the root may be written, the run fails
// on the key dir, and its dry run must name what the run names, not the
// root its run never reaches.
func TestAReapsDryRunOfALegacyKeyFailsFirstWhereItsRunDoes(t *testing.T) {
	w := newNobodysWorker(t)
	if _, promoted := w.job("job-1"); !strings.Contains(promoted, `"promoted":true`) {
		t.Fatalf("promote: %s", promoted)
	}
	kd := filepath.Join(w.root, workerKey)
	if err := os.Remove(filepath.Join(kd, "meta.db")); err != nil {
		t.Fatal(err)
	}
	old := clock().Add(-30 * 24 * time.Hour)
	if err := os.Chtimes(filepath.Join(kd, "current.jsonl"), old, old); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{kd, w.root} {
		if err := os.Chmod(dir, 0o500); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { os.Chmod(w.root, 0o700); os.Chmod(kd, 0o700) })
	code, out, errs := w.runAs("reap", w.root)
	if code != exitFault || !strings.Contains(out, "failed        "+workerKey+"  (create "+workerKey+"/meta.db") {
		t.Fatalf("run: exit %d; want 1, the key failed making its meta.db\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	code, out, errs = w.runAs("reap", "--dry-run", w.root)
	if code != exitFault || !strings.Contains(out, "failed        "+workerKey+"  (access "+workerKey+": permission denied)") || !strings.Contains(errs, "permission denied") {
		t.Errorf("dry run: exit %d; want 1, the key failed on its key dir, as its run\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
}
