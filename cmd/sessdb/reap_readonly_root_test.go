package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sessdb/db"
)

// A reap whose runner may not write in the sessions root (its own, mode
// 0500) fails each expired key whole and leaves it as it found it: a
// legacy key without the meta.db the reap made for its lock, a db key
// without a reaping entry in its history. The run asks for the root's
// write before its reaping entry and its rename (6c57177); without that
// ask, the entry was written and the rename then refused, and the legacy
// key kept the reap's meta.db, its layout changed by a reap that did
// nothing.
func TestAReapThatMayNotWriteTheRootLeavesEachExpiredKeyAsItWas(t *testing.T) {
	w := newNobodysWorker(t)
	now := clock
	t.Cleanup(func() { clock = now })
	clock = func() time.Time { return now().Add(-30 * 24 * time.Hour) }
	if _, promoted := w.job("job-1"); !strings.Contains(promoted, `"promoted":true`) {
		t.Fatalf("promote: %s", promoted)
	}
	clock = now
	const legacyKey = "fedcba9876543210fedcba9876543210"
	lkd := filepath.Join(w.root, legacyKey)
	if err := os.Mkdir(lkd, 0o700); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-30 * 24 * time.Hour)
	for name, body := range map[string]string{"current.jsonl": "{}\n", "venue": "local\n"} {
		p := filepath.Join(lkd, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, old, old)
	}
	giveToNobody(lkd)
	if err := os.Chmod(w.root, 0o500); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(w.root, 0o700) })
	code, out, errs := w.runAs("reap", w.root)
	if code != exitFault || strings.Contains(out, "removed") || strings.Count(out, "failed        ") != 2 {
		t.Errorf("reap: exit %d; want 1, both keys failed\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if names, err := os.ReadDir(lkd); err != nil || len(names) != 2 || names[0].Name() != "current.jsonl" || names[1].Name() != "venue" {
		t.Errorf("the legacy key dir holds %v, %v; want its transcript and venue alone", names, err)
	}
	dir, err := os.Open(filepath.Join(w.root, workerKey))
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	d, _, err := db.OpenSidecars(dir, db.Options{}, false)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var h []db.HistoryEntry
	if err := d.View(func(tx *db.Tx) (err error) { h, err = tx.History(0); return err }); err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(h, func(e db.HistoryEntry) bool { return e.Outcome == "reaping" }) {
		t.Errorf("the db key's history holds a reaping entry: %+v", h)
	}
}
