package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A migration's dry run that fails a key its run would fail says the
// run's words for it, then why: run as nobody, who owns the root, over
// a key whose meta.db nobody may not write (0400), which --to-legacy's
// run opens as a writer. Before, the dry run said "access <key
// dir>/meta.db: permission denied" and the run "open <key
// dir>/meta.db: permission denied".
func TestAMigrationsDryRunFailsAMetaDBItMayNotWriteInItsRunsWords(t *testing.T) {
	w := newNobodysWorker(t)
	if _, promoted := w.job("job-1"); !strings.Contains(promoted, `"promoted":true`) {
		t.Fatalf("promote: %s", promoted)
	}
	meta := filepath.Join(w.root, workerKey, "meta.db")
	if err := os.Chmod(meta, 0o400); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(meta, 0o600) // for the cleanup
	before := tree(t, w.root)
	dcode, dout, derrs := w.runAs("migrate", "--to-legacy", "--dry-run", w.root)
	if tree(t, w.root) != before {
		t.Error("the dry run changed the root")
	}
	code, out, errs := w.runAs("migrate", "--to-legacy", w.root)
	line := migrateFailedLine(out)
	if code != exitFault || !strings.HasSuffix(line, "/meta.db: permission denied") {
		t.Fatalf("run: exit %d, %q; want 1, the key failed on its meta.db\nstdout:\n%s\nstderr:\n%s", code, line, out, errs)
	}
	// The run fails the key before it reads it: its line is the error
	// alone, which the dry run's gives after what it read, then why.
	cause := strings.TrimSpace(strings.TrimPrefix(line, workerKey+"  failed "))
	if dline := migrateFailedLine(dout); dcode != code || !strings.Contains(dline, "; "+cause+": ") {
		t.Errorf("dry run: exit %d, %q; want exit %d and the run's words, %q, then why\nstdout:\n%s\nstderr:\n%s", dcode, dline, code, cause, dout, derrs)
	}
}

// migrateFailedLine is the line of a migration's text that fails the
// worker's key.
func migrateFailedLine(out string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, workerKey+"  failed ") {
			return l
		}
	}
	return ""
}
