package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sessdb/gates"
	"sessdb/internal/faults"
	"sessdb/store"
)

// A reap-owned dir its runner owns and may not write in (mode 0500, as a
// sessdb from before reap asked for the bits left one: it renamed a key
// dir its owner had made 0500 aside, then could not empty it) is finished
// by the next reap as that owner, which gives the dir (and a meta.db
// without them) the owner's bits first; its dry run says it would finish
// it. Before, every reap and check --repair failed it (unlink: permission
// denied; check judges no mode of a reap-owned dir) until an operator
// chmodded it by hand, while each dry run failed it too.
func TestAReapFinishesA0500ReapedDirItsRunnerOwns(t *testing.T) {
	for _, meta := range []os.FileMode{0o600, 0o400} {
		t.Run(meta.String(), func(t *testing.T) { reapFinishesA0500ReapedDir(t, meta) })
	}
}

func reapFinishesA0500ReapedDir(t *testing.T, meta os.FileMode) {
	w := newNobodysWorker(t)
	aside := killedReapsDir(t, w)
	os.Chmod(filepath.Join(aside, "meta.db"), meta)
	if err := os.Chmod(aside, 0o500); err != nil {
		t.Fatal(err)
	}
	name := filepath.Base(aside)
	code, out, errs := w.runAs("reap", "--dry-run", w.root)
	if code != exitOK || !strings.Contains(out, "would finish  "+name) {
		t.Errorf("dry run: exit %d; want 0, the dir to be finished\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if st, err := os.Stat(aside); err != nil || st.Mode().Perm() != 0o500 {
		t.Fatalf("the dry run changed the dir: %v, %v", st, err)
	}
	code, out, errs = w.runAs("reap", w.root)
	if code != exitOK || !strings.Contains(out, "finished      "+name) {
		t.Errorf("reap: exit %d; want 0, the dir finished\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if names, err := os.ReadDir(w.root); err != nil || len(names) != 0 {
		t.Errorf("left under the root: %v, %v", names, err)
	}
}

// killedReapsDir promotes a key in w's root 30 days ago, expires it with
// a reap killed after its rename, and returns the reap-owned dir it left:
// with its reaping entry, all of it nobody's. Its mode is made 0700 again
// when the test ends.
func killedReapsDir(t *testing.T, w nobodysWorker) string {
	now := clock
	t.Cleanup(func() { clock = now })
	clock = func() time.Time { return now().Add(-30 * 24 * time.Hour) }
	if _, promoted := w.job("job-1"); !strings.Contains(promoted, `"promoted":true`) {
		t.Fatalf("promote: %s", promoted)
	}
	clock = now
	s, err := store.New(w.root, store.Options{Bounds: gates.Bounds{TTL: 14 * 24 * time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	faults.Set(func(p faults.Point) error {
		if p == faults.ReapAfterRename {
			return errors.New("killed")
		}
		return nil
	})
	s.Reap(false)
	faults.Set(nil)
	aside, _ := filepath.Glob(filepath.Join(w.root, ".reaped-*"))
	if len(aside) != 1 {
		t.Fatalf("the killed reap left %v", aside)
	}
	t.Cleanup(func() { os.Chmod(aside[0], 0o700) })
	return aside[0]
}
