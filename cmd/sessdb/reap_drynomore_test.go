package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A reap's dry run asks what its run needs, and no more: run by a user
// the run serves, it refuses nothing the run does. A key dir its runner
// may not write whose only stale temp is a committed promotion's (spared:
// the run opens meta.db as a writer, and unlinks nothing in the dir), and
// a reap-owned dir its runner may not write that a promotion landed in
// (the run opens its meta.db as a writer and renames it under the root):
// the run keeps or restores the key, exit 0, and so says its dry run.
func TestAReapsDryRunRefusesNothingItsRunDoes(t *testing.T) {
	for _, c := range []struct {
		name  string
		setUp func(t *testing.T, w nobodysWorker) (readOnly, plan string)
	}{
		{"sweep sparing every temp, key dir 0500", func(t *testing.T, w nobodysWorker) (string, string) {
			pendingPromotion(t, w.root, workerKey)
			temps, _ := filepath.Glob(filepath.Join(w.root, workerKey, ".current.jsonl.tmp-*"))
			if len(temps) != 1 {
				t.Fatalf("promotion temps: %v; want the pending one", temps)
			}
			old := clock().Add(-2 * time.Hour)
			if err := os.Chtimes(temps[0], old, old); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(w.root, workerKey), ""
		}},
		{"restore, reap-owned dir 0500", func(t *testing.T, w nobodysWorker) (string, string) {
			aside := landedAside(t, w)
			return filepath.Join(w.root, aside), "would restore  " + aside
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newNobodysWorker(t)
			if _, promoted := w.job("job-1"); !strings.Contains(promoted, `"promoted":true`) {
				t.Fatalf("promote: %s", promoted)
			}
			readOnly, plan := c.setUp(t, w)
			if err := os.Chmod(readOnly, 0o500); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Chmod(readOnly, 0o700) })
			before := tree(t, w.root)
			code, out, errs := w.runAs("reap", "--dry-run", w.root)
			if code != exitOK || strings.Contains(out, "failed") || !strings.Contains(out, plan) {
				t.Errorf("dry run: exit %d; want 0, nothing failed, %q\nstdout:\n%s\nstderr:\n%s", code, plan, out, errs)
			}
			if tree(t, w.root) != before {
				t.Error("the dry run changed the root")
			}
			if code, out, errs := w.runAs("reap", w.root); code != exitOK || strings.Contains(out, "failed") {
				t.Errorf("run: exit %d; want 0, nothing failed, as its dry run said\nstdout:\n%s\nstderr:\n%s", code, out, errs)
			}
			if _, err := os.Stat(filepath.Join(w.root, workerKey, "meta.db")); err != nil {
				t.Errorf("the key after the run: %v; want it kept or restored", err)
			}
		})
	}
}
