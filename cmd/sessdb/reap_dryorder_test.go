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

// An expired key whose dir and sessions root its runner may not write:
// the run locks the key (its meta.db, which it may write) and fails
// renaming the dir under the root, before it writes in the dir; the dry
// run names the root too, not the key dir the run never reaches.
func TestAReapsDryRunOfAnExpiredKeyFailsFirstWhereItsRunDoes(t *testing.T) {
	w := newNobodysWorker(t)
	now := clock
	t.Cleanup(func() { clock = now })
	clock = func() time.Time { return now().Add(-30 * 24 * time.Hour) }
	if _, promoted := w.job("job-1"); !strings.Contains(promoted, `"promoted":true`) {
		t.Fatalf("promote: %s", promoted)
	}
	clock = now
	kd := filepath.Join(w.root, workerKey)
	for _, dir := range []string{kd, w.root} {
		if err := os.Chmod(dir, 0o500); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { os.Chmod(w.root, 0o700); os.Chmod(kd, 0o700) })
	code, out, errs := w.runAs("reap", w.root)
	if code != exitFault || !strings.Contains(out, "failed        "+workerKey+"  (") || !strings.Contains(out, "permission denied") {
		t.Fatalf("run: exit %d; want 1, the key failed\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	code, out, errs = w.runAs("reap", "--dry-run", w.root)
	if code != exitFault || !strings.Contains(out, "failed        "+workerKey+"  (access "+w.root+": permission denied)") {
		t.Errorf("dry run: exit %d; want 1, the key failed on the sessions root, as its run\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
}

// An empty key dir idle past the TTL is removed by one rmdir, which asks
// nothing of the dir itself: one its runner may not write (0500) in a
// root it may is removed by the run, and its dry run says so.
func TestAReapsDryRunOfAnEmptyKeyDirAsksOnlyTheRoot(t *testing.T) {
	w := newNobodysWorker(t)
	if _, promoted := w.job("job-1"); !strings.Contains(promoted, `"promoted":true`) {
		t.Fatalf("promote: %s", promoted)
	}
	const empty = "1123456789abcdef0123456789abcdef"
	dir := filepath.Join(w.root, empty)
	if err := os.Mkdir(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	os.Chown(dir, nobody, nobody)
	old := clock().Add(-30 * 24 * time.Hour)
	os.Chtimes(dir, old, old)
	code, out, errs := w.runAs("reap", "--dry-run", w.root)
	if plans := reapPlans(out); code != exitOK || len(plans) != 1 || !strings.Contains(plans[0], empty) {
		t.Errorf("dry run: exit %d; want 0, the empty key dir removed\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	code, out, errs = w.runAs("reap", w.root)
	if _, err := os.Lstat(dir); code != exitOK || !os.IsNotExist(err) {
		t.Errorf("run: exit %d, the dir: %v; want 0, removed\nstdout:\n%s\nstderr:\n%s", code, err, out, errs)
	}
}

// A reap-owned dir whose meta.db its runner may only read (another
// user's, mode 0644; one of its own it gives the bits): the run opens
// the meta.db as a writer first, and fails on it, before it meets what
// it would refuse (something in a dir it finishes that is not the
// store's; a dir a promotion landed in whose key is taken again); the
// dry run fails on the meta.db too, not on what the run never reaches.
func TestAReapsDryRunOfAReapOwnedDirFailsFirstWhereItsRunDoes(t *testing.T) {
	for _, c := range []struct {
		name  string
		setUp func(w nobodysWorker) (aside string)
	}{
		{"finish, with a file not the store's", func(w nobodysWorker) string {
			aside := killedReapsAside(t, w)
			if err := os.WriteFile(filepath.Join(aside, "notes.txt"), []byte("mine"), 0o600); err != nil {
				t.Fatal(err)
			}
			os.Chown(filepath.Join(aside, "notes.txt"), nobody, nobody)
			return aside
		}},
		{"restore, its key taken again", func(w nobodysWorker) string {
			aside := filepath.Join(w.root, landedAside(t, w))
			if err := os.MkdirAll(filepath.Join(w.root, workerKey, "sub"), 0o700); err != nil {
				t.Fatal(err)
			}
			os.Chown(filepath.Join(w.root, workerKey), nobody, nobody)
			os.Chown(filepath.Join(w.root, workerKey, "sub"), nobody, nobody)
			return aside
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newNobodysWorker(t)
			if _, promoted := w.job("job-1"); !strings.Contains(promoted, `"promoted":true`) {
				t.Fatalf("promote: %s", promoted)
			}
			aside := c.setUp(w)
			// Another user's (root's), so that the run cannot give itself
			// the bits, as it does for its own (giveReapedBits).
			if err := os.Chown(filepath.Join(aside, "meta.db"), 0, 0); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(filepath.Join(aside, "meta.db"), 0o644); err != nil {
				t.Fatal(err)
			}
			name := filepath.Base(aside)
			code, out, errs := w.runAs("reap", w.root)
			if code != exitFault || !strings.Contains(out, "failed        "+name+"  (") || !strings.Contains(out, "permission denied") {
				t.Fatalf("run: exit %d; want 1, the dir failed on its meta.db\nstdout:\n%s\nstderr:\n%s", code, out, errs)
			}
			code, out, errs = w.runAs("reap", "--dry-run", w.root)
			if code != exitFault || !strings.Contains(out, "failed        "+name+"  (open "+name+"/meta.db: permission denied)") {
				t.Errorf("dry run: exit %d; want 1, the dir failed on its meta.db, as its run\nstdout:\n%s\nstderr:\n%s", code, out, errs)
			}
		})
	}
}

// A reap-owned dir a killed reap left with no meta.db (it removes the
// meta.db last) opens none: its run meets what is not the store's first,
// whatever the dir's mode, and so does its dry run, which asks for no
// meta.db, nor the right to make one.
func TestAReapsDryRunOfAReapOwnedDirWithoutAMetaDBAsksForNone(t *testing.T) {
	w := newNobodysWorker(t)
	if _, promoted := w.job("job-1"); !strings.Contains(promoted, `"promoted":true`) {
		t.Fatalf("promote: %s", promoted)
	}
	aside := killedReapsAside(t, w)
	if err := os.Remove(filepath.Join(aside, "meta.db")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(aside, "notes.txt"), []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Chown(filepath.Join(aside, "notes.txt"), nobody, nobody)
	if err := os.Chmod(aside, 0o500); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(aside, 0o700) })
	name := filepath.Base(aside)
	for _, args := range [][]string{{"reap", w.root}, {"reap", "--dry-run", w.root}} {
		code, out, errs := w.runAs(args...)
		if code != exitFault || !strings.Contains(out, "failed        "+name+"  (remove "+name+`: "notes.txt" is a regular file, not the store's`) {
			t.Errorf("%q: exit %d; want 1, the dir failed on the file not the store's\nstdout:\n%s\nstderr:\n%s", args, code, out, errs)
		}
	}
}
