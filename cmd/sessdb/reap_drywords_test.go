package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A reap's dry run that fails a name its run would fail says what the run
// will say: the same cause, on the same path, so that an operator who
// reads the dry run knows the run's line. Run as nobody, who owns the
// root. Each case: a stray temp of a key the reap keeps, in a key dir
// nobody may not write (0500; the run's unlink of the temp is refused).
// Before, the dry run said "access <key>: permission denied" and the run
// "remove <key>/<temp>: permission denied". An empty key dir idle past
// the TTL in a sessions root nobody may not write (0500; the run's rmdir
// is refused): before, the dry run said "access <root>" and the run
// "rmdir <key>". A meta.db nobody may not
// write (0400), that the run opens as a writer first: of a key it keeps
// with a stray temp, of an expired key, of a reap-owned dir whose meta.db
// has a second name (so that the run does not give itself the bits).
// Before, the dry run said "access <path>/meta.db" and the run "open
// <path>/meta.db".
func TestAReapsDryRunFailsANameInItsRunsWords(t *testing.T) {
	for _, c := range []struct {
		name  string
		old   bool // the key's promotion made past the TTL
		setUp func(w nobodysWorker) (readOnly string, mode os.FileMode, failed string)
	}{
		{"sweep, key dir 0500", false, func(w nobodysWorker) (string, os.FileMode, string) {
			strayTemp(t, w)
			return filepath.Join(w.root, workerKey), 0o500, workerKey
		}},
		{"empty key dir, sessions root 0500", false, func(w nobodysWorker) (string, os.FileMode, string) {
			const empty = "1123456789abcdef0123456789abcdef"
			dir := filepath.Join(w.root, empty)
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			os.Chown(dir, nobody, nobody)
			old := clock().Add(-30 * 24 * time.Hour)
			os.Chtimes(dir, old, old)
			return w.root, 0o500, empty
		}},
		{"sweep, its meta.db 0400", false, func(w nobodysWorker) (string, os.FileMode, string) {
			strayTemp(t, w)
			return filepath.Join(w.root, workerKey, "meta.db"), 0o400, workerKey
		}},
		{"expired key, its meta.db 0400", true, func(w nobodysWorker) (string, os.FileMode, string) {
			return filepath.Join(w.root, workerKey, "meta.db"), 0o400, workerKey
		}},
		{"finish, its meta.db 0400 and linked", false, func(w nobodysWorker) (string, os.FileMode, string) {
			aside := killedReapsAside(t, w)
			linkOut(t, w, filepath.Join(aside, "meta.db"))
			return filepath.Join(aside, "meta.db"), 0o400, filepath.Base(aside)
		}},
		{"restore, its meta.db 0400 and linked", false, func(w nobodysWorker) (string, os.FileMode, string) {
			aside := landedAside(t, w)
			linkOut(t, w, filepath.Join(w.root, aside, "meta.db"))
			return filepath.Join(w.root, aside, "meta.db"), 0o400, aside
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newNobodysWorker(t)
			now := clock
			t.Cleanup(func() { clock = now })
			if c.old {
				clock = func() time.Time { return now().Add(-30 * 24 * time.Hour) }
			}
			if _, promoted := w.job("job-1"); !strings.Contains(promoted, `"promoted":true`) {
				t.Fatalf("promote: %s", promoted)
			}
			clock = now
			readOnly, mode, failed := c.setUp(w)
			if err := os.Chmod(readOnly, mode); err != nil {
				t.Fatal(err)
			}
			defer os.Chmod(readOnly, 0o700) // for the cleanup
			before := tree(t, w.root)
			dcode, dout, derrs := w.runAs("reap", "--dry-run", w.root)
			if tree(t, w.root) != before {
				t.Error("the dry run changed the root")
			}
			code, out, errs := w.runAs("reap", w.root)
			dline, line := failedLine(dout, failed), failedLine(out, failed)
			if code != exitFault || line == "" || !strings.Contains(line, "permission denied") {
				t.Fatalf("run: exit %d; want 1, %s failed, permission denied\nstdout:\n%s\nstderr:\n%s", code, failed, out, errs)
			}
			if dcode != code || dline != line {
				t.Errorf("dry run: exit %d, %q; want exit %d and the run's line, %q\nstdout:\n%s\nstderr:\n%s", dcode, dline, code, line, dout, derrs)
			}
		})
	}
}

// failedLine is the line of a reap's text that fails name.
func failedLine(out, name string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "failed        "+name+"  (") {
			return l
		}
	}
	return ""
}

// linkOut gives meta a second name outside w's root.
func linkOut(t *testing.T, w nobodysWorker, meta string) {
	t.Helper()
	if err := os.Link(meta, filepath.Join(w.base, "meta.db.other-name")); err != nil {
		t.Fatal(err)
	}
}
