package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A reap that keeps a key sweeps its stale temps under the key's lock as a
// writer: its run opens meta.db as a writer before it looks at what it
// would sweep. A key whose only stale temp is a committed promotion's
// (spared: it is that generation's only copy) has nothing to sweep, but
// the run still opens meta.db so; run by a user who may read meta.db and
// not write it, it fails the key, exit 1. Its dry run, which opens
// meta.db shared, said nothing of the key, exit 0.
func TestAReapsDryRunFailsASweepItsRunCannotOpenThoughItSparesEveryTemp(t *testing.T) {
	w := newNobodysWorker(t)
	if _, promoted := w.job("job-1"); !strings.Contains(promoted, `"promoted":true`) {
		t.Fatalf("promote: %s", promoted)
	}
	pendingPromotion(t, w.root, workerKey)
	temps, _ := filepath.Glob(filepath.Join(w.root, workerKey, ".current.jsonl.tmp-*"))
	if len(temps) != 1 {
		t.Fatalf("promotion temps: %v; want the pending one", temps)
	}
	old := clock().Add(-2 * time.Hour)
	if err := os.Chtimes(temps[0], old, old); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := w.runAs("reap", "--dry-run", w.root); code != exitOK || strings.Contains(out, "failed") {
		t.Fatalf("dry run with every bit: exit %d; want 0, nothing failed\n%s%s", code, out, errs)
	}
	meta := filepath.Join(w.root, workerKey, "meta.db")
	if err := os.Chmod(meta, 0o400); err != nil {
		t.Fatal(err)
	}
	before := tree(t, w.root)
	code, out, errs := w.runAs("reap", "--dry-run", w.root)
	if code != exitFault || !strings.Contains(out, "failed        "+workerKey) || !strings.Contains(errs, "permission denied") {
		t.Errorf("dry run: exit %d; want 1, the key failed, permission denied, as its run\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if tree(t, w.root) != before {
		t.Error("the dry run changed the root")
	}
	if code, out, errs := w.runAs("reap", w.root); code != exitFault || !strings.Contains(out, "failed        "+workerKey) {
		t.Errorf("run: exit %d; want 1, the key failed\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if _, err := os.Stat(temps[0]); err != nil {
		t.Errorf("the pending promotion's temp: %v; want it kept", err)
	}
}
