package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"sessdb/gates"
	"sessdb/internal/faults"
	"sessdb/store"
)

// A reap's dry run lists what its run would do. Run by a user who may read
// what it would change but not change it, the run fails the name, exit 1;
// the dry run fails it the same way, naming what it may not write, and
// changes nothing. Before, the dry run listed it as done and exited 0.
// Each case: an expired key (its meta.db 0400, its dir 0500, or the
// sessions root 0500, which the run renames it under); a reap-owned dir
// a promotion landed in, which the run moves back to its key (a rename
// under the root); one a killed reap left, whose entries the run unlinks
// (in that dir); an empty key dir idle past the TTL (an rmdir under the
// root); a stray temp of a key the reap keeps (an unlink in the key dir),
// its record naming a promotion's temp or none.
//
// A reap-owned dir, or its meta.db, that its runner owns and that lacks
// only the owner's bits is the exception (given): the run gives them
// first and finishes or restores it, and the dry run says it would.
func TestAReapsDryRunFailsWhatItsRunnerMayNotChange(t *testing.T) {
	for _, c := range []struct {
		name  string
		old   bool // the key's promotion made past the TTL
		given bool // the run gives the bits, and does it
		setUp func(w nobodysWorker) (readOnly string, mode os.FileMode, listed string)
	}{
		{"expired key, meta.db 0400", true, false, func(w nobodysWorker) (string, os.FileMode, string) {
			return filepath.Join(w.root, workerKey, "meta.db"), 0o400, "failed        " + workerKey
		}},
		{"expired key, key dir 0500", true, false, func(w nobodysWorker) (string, os.FileMode, string) {
			return filepath.Join(w.root, workerKey), 0o500, "failed        " + workerKey
		}},
		{"expired key, sessions root 0500", true, false, func(w nobodysWorker) (string, os.FileMode, string) {
			return w.root, 0o500, "failed        " + workerKey
		}},
		{"restore, sessions root 0500", false, false, func(w nobodysWorker) (string, os.FileMode, string) {
			aside := landedAside(t, w)
			return w.root, 0o500, "failed        " + aside
		}},
		{"restore, its meta.db 0400", false, true, func(w nobodysWorker) (string, os.FileMode, string) {
			aside := landedAside(t, w)
			return filepath.Join(w.root, aside, "meta.db"), 0o400, "failed        " + aside
		}},
		{"finish, reap-owned dir 0500", false, true, func(w nobodysWorker) (string, os.FileMode, string) {
			aside := killedReapsAside(t, w)
			return aside, 0o500, "failed        " + filepath.Base(aside)
		}},
		{"finish, sessions root 0500", false, false, func(w nobodysWorker) (string, os.FileMode, string) {
			aside := killedReapsAside(t, w)
			return w.root, 0o500, "failed        " + filepath.Base(aside)
		}},
		{"finish, its meta.db 0400", false, true, func(w nobodysWorker) (string, os.FileMode, string) {
			aside := killedReapsAside(t, w)
			return filepath.Join(aside, "meta.db"), 0o400, "failed        " + filepath.Base(aside)
		}},
		{"empty key dir, sessions root 0500", false, false, func(w nobodysWorker) (string, os.FileMode, string) {
			const empty = "1123456789abcdef0123456789abcdef"
			dir := filepath.Join(w.root, empty)
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			os.Chown(dir, nobody, nobody)
			old := clock().Add(-30 * 24 * time.Hour)
			os.Chtimes(dir, old, old)
			return w.root, 0o500, "failed        " + empty
		}},
		{"sweep, key dir 0500", false, false, func(w nobodysWorker) (string, os.FileMode, string) {
			strayTemp(t, w)
			return filepath.Join(w.root, workerKey), 0o500, "failed        " + workerKey
		}},
		{"sweep, its meta.db 0400", false, false, func(w nobodysWorker) (string, os.FileMode, string) {
			strayTemp(t, w)
			return filepath.Join(w.root, workerKey, "meta.db"), 0o400, "failed        " + workerKey
		}},
		// A record naming no temp at all (a roll-forward by check --repair
		// cleared it; a promotion's record names its temp until the next
		// one), so nothing is spared: the run still opens meta.db first.
		{"sweep, no temp named by the record, its meta.db 0400", false, false, func(w nobodysWorker) (string, os.FileMode, string) {
			pendingPromotion(t, w.root, workerKey)
			if code, out, errs := w.runAs("check", "--repair", w.root); code != exitOK || !strings.Contains(out, "rolled forward") {
				t.Fatalf("check --repair of the pending promotion: exit %d\n%s%s", code, out, errs)
			}
			strayTemp(t, w)
			return filepath.Join(w.root, workerKey, "meta.db"), 0o400, "failed        " + workerKey
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
			readOnly, mode, listed := c.setUp(w)
			if code, out, errs := w.runAs("reap", "--dry-run", w.root); code != exitOK || strings.Contains(out, "failed") || len(reapPlans(out)) == 0 {
				t.Fatalf("dry run with every bit: exit %d; want 0, something to do, nothing failed\n%s%s", code, out, errs)
			}
			if err := os.Chmod(readOnly, mode); err != nil {
				t.Fatal(err)
			}
			before := tree(t, w.root)
			code, out, errs := w.runAs("reap", "--dry-run", w.root)
			if c.given {
				if code != exitOK || strings.Contains(out, "failed") || len(reapPlans(out)) == 0 {
					t.Errorf("dry run: exit %d; want 0, what the run gives itself the bits for planned\nstdout:\n%s\nstderr:\n%s", code, out, errs)
				}
				if tree(t, w.root) != before {
					t.Error("the dry run changed the root")
				}
				if code, out, errs := w.runAs("reap", w.root); code != exitOK || strings.Contains(out, "failed") {
					t.Errorf("run: exit %d; want 0, the dir finished or restored\nstdout:\n%s\nstderr:\n%s", code, out, errs)
				}
				if aside, _ := filepath.Glob(filepath.Join(w.root, ".reaped-*")); len(aside) > 0 {
					t.Errorf("left: %v", aside)
				}
				return
			}
			if code != exitFault || !strings.Contains(out, listed) || !strings.Contains(errs, "permission denied") || len(reapPlans(out)) > 0 {
				t.Errorf("dry run: exit %d; want 1, %q, permission denied, nothing it would do\nstdout:\n%s\nstderr:\n%s", code, listed, out, errs)
			}
			if tree(t, w.root) != before {
				t.Error("the dry run changed the root")
			}
			if code, out, errs := w.runAs("reap", w.root); code != exitFault || !strings.Contains(out, listed) {
				t.Errorf("run: exit %d; want 1, %q, as its dry run said\nstdout:\n%s\nstderr:\n%s", code, listed, out, errs)
			}
			os.Chmod(readOnly, 0o700) // for the cleanup, when nobody owns base
		})
	}
}

// landedAside moves w's key aside by hand, as a reap killed after its
// rename leaves it, its history without a reaping entry: a promotion that
// landed after its reap was killed, which a reap restores. It returns the
// reap-owned name.
func landedAside(t *testing.T, w nobodysWorker) string {
	t.Helper()
	aside := ".reaped-" + workerKey + "-0123456789abcdef"
	if err := os.Rename(filepath.Join(w.root, workerKey), filepath.Join(w.root, aside)); err != nil {
		t.Fatal(err)
	}
	return aside
}

// killedReapsAside is the reap-owned dir of w's key that a reap killed
// after its rename leaves, its reaping entry last, which a reap finishes
// (removes). It returns the dir's path.
func killedReapsAside(t *testing.T, w nobodysWorker) string {
	t.Helper()
	// A reap killed after its rename: its reaping entry last.
	faults.Set(func(p faults.Point) error {
		if p == faults.ReapAfterRename {
			return syscall.EIO
		}
		return nil
	})
	defer faults.Set(nil)
	later := func() time.Time { return clock().Add(30 * 24 * time.Hour) }
	s, err := store.New(w.root, store.Options{Now: later, Bounds: gates.Bounds{TTL: 14 * 24 * time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	s.Reap(false)
	aside, _ := filepath.Glob(filepath.Join(w.root, store.ReapedPrefix+workerKey+"-*"))
	if len(aside) != 1 {
		t.Fatalf("no reap-owned dir: %v", aside)
	}
	return aside[0]
}

// strayTemp leaves a promotion's temp in w's key dir, older than a sweep
// spares, which a reap of the key it keeps removes.
func strayTemp(t *testing.T, w nobodysWorker) {
	t.Helper()
	temp := filepath.Join(w.root, workerKey, ".current.jsonl.tmp-0123456789abcdef")
	if err := os.WriteFile(temp, []byte(header), 0o600); err != nil {
		t.Fatal(err)
	}
	old := clock().Add(-2 * time.Hour)
	os.Chtimes(temp, old, old)
	os.Chown(temp, nobody, nobody)
}

// reapPlans is the lines of a dry run's text that say what it would do.
func reapPlans(out string) []string {
	var plans []string
	for _, l := range strings.Split(out, "\n") {
		for _, verb := range []string{"would remove  ", "would finish  ", "would restore  "} {
			if strings.HasPrefix(l, verb) {
				plans = append(plans, l)
			}
		}
	}
	return plans
}
