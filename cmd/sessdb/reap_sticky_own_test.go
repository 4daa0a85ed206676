package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The sticky rule's two leaves: an expired key whose sticky dir is
// another user's but whose entries are the reaper's own, and one whose
// entries are another's in a sticky dir the reaper owns, are removed by
// the run (exit 0), as the dry run says: the unlink of an entry in a
// sticky dir is its owner's or the dir owner's. A DeleteErr that asked
// only one of the two owners survived every test (mutnew47's F17, F18):
// the dry run and the run would fail whole a key the kernel lets go.
func TestAReapRemovesAnExpiredKeyInAStickyDirWhoseEntriesOrDirItOwns(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("root is needed to make the key dir or its entries another user's")
	}
	for _, owns := range []string{"entries", "dir"} {
		t.Run(owns, func(t *testing.T) {
			w := newNobodysWorker(t)
			now := clock
			t.Cleanup(func() { clock = now })
			clock = func() time.Time { return now().Add(-30 * 24 * time.Hour) }
			if _, promoted := w.job("job-1"); !strings.Contains(promoted, `"promoted":true`) {
				t.Fatalf("promote: %s", promoted)
			}
			clock = now
			kd := filepath.Join(w.root, workerKey)
			if owns == "entries" {
				os.Chown(kd, 0, 0)
			} else {
				entries, _ := os.ReadDir(kd)
				for _, e := range entries {
					p := filepath.Join(kd, e.Name())
					os.Lchown(p, 0, 0)
					if e.Name() == "meta.db" {
						os.Chmod(p, 0o666)
					}
				}
			}
			if err := os.Chmod(kd, 0o777|os.ModeSticky); err != nil {
				t.Fatal(err)
			}
			for _, args := range [][]string{{"reap", "--dry-run", w.root}, {"reap", w.root}} {
				code, out, errs := w.runAs(args...)
				if code != exitOK || !strings.Contains(out, workerKey) || strings.Contains(out, "failed        "+workerKey) {
					t.Errorf("%v: exit %d; want 0, the key removed\nstdout:\n%s\nstderr:\n%s", args, code, out, errs)
				}
			}
			if _, err := os.Lstat(kd); !os.IsNotExist(err) {
				t.Errorf("the key dir after the reap: %v; want it gone", err)
			}
			if aside, _ := filepath.Glob(filepath.Join(w.root, ".reaped-*")); len(aside) > 0 {
				t.Errorf("a reap-owned dir was left: %v", aside)
			}
		})
	}
}
