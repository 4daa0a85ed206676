package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sessdb/db"
)

// A key dir the worker may not write in, holding meta.db and an old
// meta.db temp a killed run left: the worker's dry run of --to-legacy
// fails the key as its run does, and its failed line lists no removal,
// the temp's included (the run cannot sweep it there either). cf14dd2
// drops the plan and skips the temps' listing for such a key; the key
// dirs of TestTheWorkersDryRunsFailAKeyDirItMayNotWriteInAsTheRunsDo held
// no temp, so a dry run that listed them after its refusal (mutants M02,
// M03b) passed it. (To meta.db, a refused legacy key has no lock and
// lists no temps either way.)
func TestAWorkersRefusedDryRunListsNoTempItCannotSweep(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the migration as nobody, whom a mode binds")
	}
	w := newNobodysWorker(t)
	dir := filepath.Join(w.root, workerKey)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	temp := db.TempPrefix + "0123456789abcdef"
	for name, data := range map[string]string{"current.jsonl": header, "pi-version": "0.58.3", "venue": "local"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{w.root, dir, filepath.Join(dir, "current.jsonl"), filepath.Join(dir, "pi-version"), filepath.Join(dir, "venue")} {
		if err := os.Chown(p, nobody, nobody); err != nil {
			t.Fatal(err)
		}
	}
	if code, out, errs := w.runAs("migrate", w.root); code != exitOK {
		t.Fatalf("the worker's migration into meta.db: exit %d\n%s\n%s", code, out, errs)
	}
	if err := os.WriteFile(filepath.Join(dir, temp), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * time.Minute)
	if err := os.Chtimes(filepath.Join(dir, temp), old, old); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(filepath.Join(dir, temp), nobody, nobody); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	code, out, errs := w.runAs("migrate", "--to-legacy", "--dry-run", w.root)
	if code != exitFault || !strings.Contains(out, workerKey+"  failed") {
		t.Fatalf("the worker's dry run: exit %d\n%s\n%s; want the key failed", code, out, errs)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, workerKey+"  failed") && (strings.Contains(line, "removes") || strings.Contains(line, temp)) {
			t.Errorf("the dry run's failed line lists a removal the run cannot make: %s", line)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, temp)); err != nil {
		t.Errorf("the temp after the dry run: %v", err)
	}
}
