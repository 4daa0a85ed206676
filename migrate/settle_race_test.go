package migrate

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sessdb/db"
	"sessdb/internal/faults"
	"sessdb/store"
)

// migrate --to-legacy lets the store roll a key forward under the store's
// own lock, then takes the key's lock again: a promotion may commit in
// between and be killed before its rename. Its temp is then the only copy
// of a generation meta.db names; the rollback leaves the key (failed,
// meta.db and the temp kept), the store resumes that generation, and a
// re-run rolls it forward and carries it into the legacy layout. (Had the
// rollback gone on, meta.db would be removed and the legacy key would
// resume the generation before it, the committed run lost.)
func TestToLegacyLeavesAPromotionCommittedBetweenItsLocks(t *testing.T) {
	root, key := oneKey(t)
	migrate(t, root, false, testOpts())
	debris := filepath.Join(root, key, ".current.jsonl.tmp-0123456789abcdef")
	must(t, os.WriteFile(debris, []byte("debris\n"), 0o600))
	st, sess, size := raceJob(t, root, key)
	fired := false
	t.Cleanup(func() { faults.Set(nil) })
	faults.Set(func(p faults.Point) error {
		switch {
		case p == faults.PromoteAfterCommit:
			return errors.New("killed between the commit and the rename")
		case p == faults.ToLegacyRolledForward && !fired:
			fired = true
			if res, err := st.Promote(sess, store.PromoteRequest{PiVersion: testPi}); err == nil || res.Promoted {
				t.Errorf("the promotion killed after its commit = %+v, %v", res, err)
			}
		}
		return nil
	})
	got, _ := migrate(t, root, true, testOpts())
	faults.Set(nil)
	if !fired {
		t.Fatal("the rollback never let go of the key's lock between its roll-forward and its second lock")
	}
	if r := got[key]; r.Action != Failed {
		t.Errorf("the rollback of a key a promotion committed to meanwhile = %+v; want failed, the key left", r)
	}
	if _, err := os.Lstat(filepath.Join(root, key, "meta.db")); err != nil {
		t.Errorf("meta.db after the rollback: %v; want it kept, it names the committed generation", err)
	}
	again, err := st.Resolve(key, store.Job{PiVersion: testPi, Venue: "local"}, t.TempDir())
	must(t, err)
	if !again.Resume || again.Bytes != size {
		t.Fatalf("resolve after the rollback = {resume %v, %s, %d bytes}; want the committed promotion's %d bytes resumed", again.Resume, again.Reason, again.Bytes, size)
	}
	got, _ = migrate(t, root, true, testOpts())
	if r := got[key]; r.Action != Migrated {
		t.Fatalf("the re-run = %+v; want migrated", r)
	}
	b, err := os.ReadFile(filepath.Join(root, key, "current.jsonl"))
	must(t, err)
	if int64(len(b)) != size || !strings.Contains(string(b), `"content":"hi"`) {
		t.Errorf("the legacy transcript after the re-run holds %d bytes; want the committed promotion's %d", len(b), size)
	}
}

// TestRollbackReportsAsRemovedOnlyTheStrayTempsItsRollForwardSwept: the
// rollback lists the promotion temps its roll-forward will sweep, to
// report them removed. A promotion that commits after the rollback let go
// of the key's lock, and is killed before its rename, leaves a temp that
// the roll-forward renames into place, not removes: the report must not
// name that generation's transcript as a file removed. Only what was
// there under the lock is listed.
func TestRollbackReportsAsRemovedOnlyTheStrayTempsItsRollForwardSwept(t *testing.T) {
	root, key := oneKey(t)
	migrate(t, root, false, testOpts())
	dir := filepath.Join(root, key)
	const debris = ".current.jsonl.tmp-0123456789abcdef"
	must(t, os.WriteFile(filepath.Join(dir, debris), []byte("debris\n"), 0o600))
	st, sess, size := raceJob(t, root, key)
	committed := ""
	t.Cleanup(func() { faults.Set(nil) })
	faults.Set(func(p faults.Point) error {
		switch {
		case p == faults.PromoteAfterCommit:
			return errors.New("killed between the commit and the rename")
		case p == faults.ToLegacyUnlocked && committed == "":
			committed = "none"
			if res, err := st.Promote(sess, store.PromoteRequest{PiVersion: testPi}); err == nil || res.Promoted {
				t.Errorf("the promotion killed after its commit = %+v, %v", res, err)
			}
			names, err := os.ReadDir(dir)
			must(t, err)
			for _, n := range names {
				if strings.HasPrefix(n.Name(), storeTempPrefix) && n.Name() != debris {
					committed = n.Name()
				}
			}
		}
		return nil
	})
	got, _ := migrate(t, root, true, testOpts())
	faults.Set(nil)
	if committed == "" || committed == "none" {
		t.Fatalf("the hook found no committed temp (%q)", committed)
	}
	r := got[key]
	// The debris is gone either way (the promotion's own sweep took it);
	// the committed temp was renamed, and is no file removed.
	if r.Action != Migrated || slices.Contains(r.Removed, committed) || !slices.Contains(r.Removed, db.FileName) {
		t.Errorf("rollback: %s %v; want migrate, removing meta.db and not %s, the committed generation the roll-forward renamed into place", r.Action, r.Removed, committed)
	}
	b, err := os.ReadFile(filepath.Join(dir, "current.jsonl"))
	must(t, err)
	if int64(len(b)) != size {
		t.Errorf("the legacy transcript holds %d bytes; want the committed promotion's %d", len(b), size)
	}
}
