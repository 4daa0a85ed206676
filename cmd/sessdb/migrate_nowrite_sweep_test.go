package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// migrate (to meta.db) over a key already in meta.db, in a key dir of
// mode 0500 holding a meta.db temp a killed run left (a minute old, no
// flock): the run takes meta.db's lock, finds the key already there, and
// its sweep of the temp, an unlink in a key dir it may not write in,
// removes nothing and lists nothing (the temp stays, for check to
// report). Its dry run listed the temp as one the run "removes", a plan
// the run did not keep. It now lists what the run removes: nothing,
// there, as the fleet's --from etcd's dry run has since 539a6d9.
func TestAMigrationsDryRunListsNoSweepTheRunMayNotMake(t *testing.T) {
	w := newNobodysWorker(t)
	if _, promoted := w.job("job-1"); !strings.Contains(promoted, `"promoted":true`) {
		t.Fatalf("promote: %s", promoted)
	}
	kd := filepath.Join(w.root, workerKey)
	temp := filepath.Join(kd, ".meta.db.tmp-0123456789abcdef")
	if err := os.WriteFile(temp, []byte("a killed run's"), 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(temp, old, old); err != nil {
		t.Fatal(err)
	}
	giveToNobody(w.root)
	if err := os.Chmod(kd, 0o500); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(kd, 0o700) // for the cleanup
	dcode, dout, derrs := w.runAs("migrate", "--dry-run", w.root)
	code, out, errs := w.runAs("migrate", w.root)
	line := func(out string) string {
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, workerKey+"  ") {
				return l
			}
		}
		return ""
	}
	if code != exitOK || !strings.HasPrefix(line(out), workerKey+"  already") {
		t.Fatalf("the run: exit %d; want 0, the key already there\n%s\n%s", code, out, errs)
	}
	if _, err := os.Lstat(temp); err != nil {
		t.Fatalf("the temp after the run: %v; want it left (the key dir 0500)", err)
	}
	if dl, l := line(dout), line(out); dcode != code || dl != l {
		t.Errorf("the dry run: exit %d, %q\n%s\nwant exit %d and the run's line, %q", dcode, dl, derrs, code, l)
	}
}
