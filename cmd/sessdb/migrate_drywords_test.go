package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sessdb/store"
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

// The fleet's migrations too: --to etcd over a key whose meta.db nobody
// may not write (0400), and --from etcd over one already at the fleet's
// generation, each run opening meta.db as a writer first. Before, each
// dry run said "access <key dir>/meta.db: permission denied" and its run
// "open <key dir>/meta.db: permission denied".
func TestAFleetMigrationsDryRunFailsAMetaDBItMayNotWriteInItsRunsWords(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the migration as nobody, whom a mode binds")
	}
	for _, dir := range []string{"--to", "--from"} {
		t.Run(dir, func(t *testing.T) {
			key := store.Key("github", "drywords", dir)
			_, _, runAs, root, _ := nobodysRootBesideAFleet(t, key, "1")
			if dir == "--from" {
				if code, out, errs := runAs("migrate", "--to", "etcd", root); code != exitOK {
					t.Fatalf("to etcd: exit %d\n%s\n%s", code, out, errs)
				}
			}
			meta := filepath.Join(root, key, "meta.db")
			if err := os.Chmod(meta, 0o400); err != nil {
				t.Fatal(err)
			}
			defer os.Chmod(meta, 0o600)
			before := tree(t, root)
			dcode, dout, derrs := runAs("migrate", dir, "etcd", "--dry-run", root)
			if tree(t, root) != before {
				t.Error("the dry run changed the root")
			}
			code, out, errs := runAs("migrate", dir, "etcd", root)
			cause := runsCause(failedKeyLine(out, key))
			if code != exitFault || !strings.HasSuffix(cause, "/meta.db: permission denied") {
				t.Fatalf("run: exit %d, %q; want 1, the key failed on its meta.db\nstdout:\n%s\nstderr:\n%s", code, cause, out, errs)
			}
			if dline := failedKeyLine(dout, key); dcode != code || !strings.Contains(dline, cause) {
				t.Errorf("dry run: exit %d, %q; want exit %d and the run's words, %q\nstdout:\n%s\nstderr:\n%s", dcode, dline, code, cause, dout, derrs)
			}
		})
	}
}

// failedKeyLine is the line of a migration's text that fails key.
func failedKeyLine(out, key string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, key+"  failed ") {
			return l
		}
	}
	return ""
}

// runsCause is a run's failed line's cause: its last "; "-part, after
// what it read of the key, if anything.
func runsCause(line string) string {
	if i := strings.LastIndex(line, "; "); i >= 0 {
		return line[i+2:]
	}
	_, cause, _ := strings.Cut(line, " failed ")
	return strings.TrimSpace(cause)
}
