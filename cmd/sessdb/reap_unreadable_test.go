package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A reap-owned dir a promotion landed in (or whose reap recorded nothing)
// is moved back to its key over an empty dir there, one its runner may
// not read included: rename(2) needs nothing of the dir it replaces. The
// dry run says so too. Before, the dry run listed the dir at the key to
// see whether it was empty and failed the reap-owned dir with "permission
// denied", while the reap restored it.
func TestReapDryRunOfARestoreOverAnEmptyDirItMayNotReadSaysRestore(t *testing.T) {
	w := newNobodysWorker(t)
	if _, promoted := w.job("job-1"); !strings.Contains(promoted, `"promoted":true`) {
		t.Fatalf("first promote: %s", promoted)
	}
	key := filepath.Join(w.root, workerKey)
	aside := filepath.Join(w.root, ".reaped-"+workerKey+"-0123456789abcdef")
	if err := os.Rename(key, aside); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(key, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(key, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	// The dir at the key is a key its runner may not open, which both
	// runs fail (or, where the restore came first, the run finds the
	// key restored): only the reap-owned dir's lines are compared.
	name := filepath.Base(aside)
	_, out, errs := w.runAs("reap", "--dry-run", "--sessions-dir", w.root)
	if !strings.Contains(out, "would restore  "+name) || strings.Contains(out, "failed        "+name) {
		t.Errorf("reap --dry-run: want it to say it would restore %s\n%s\n%s", name, out, errs)
	}
	_, out, errs = w.runAs("reap", "--sessions-dir", w.root)
	if !strings.Contains(out, "restored      "+name) {
		t.Fatalf("reap: want %s restored\n%s\n%s", name, out, errs)
	}
	if _, err := os.Stat(filepath.Join(key, "current.jsonl")); err != nil {
		t.Errorf("the key after the reap: %v", err)
	}
}
