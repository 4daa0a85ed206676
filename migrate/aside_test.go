package migrate

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sessdb/db"
	"sessdb/store"
)

// TestRollbackOfAKeyWithARecordBesideAMovedAsideMetaDB: a key whose
// damaged meta.db check --repair moved aside, and that has a record again
// (check --repair --accept, or a promotion), resumes: a meta.db with a
// record is authoritative, and the moved-aside file is only evidence. The
// legacy layout has no record to outrank it: a legacy key dir with a
// moved-aside meta.db is meta-moved-aside, cold. The rollback must not
// turn the resumable key cold; it fails it, naming the file, and leaves
// the key as it was, and the plan says the same.
func TestRollbackOfAKeyWithARecordBesideAMovedAsideMetaDB(t *testing.T) {
	root, key := oneKey(t)
	migrate(t, root, false, testOpts())
	aside := store.AsidePrefix + "20261201T000000Z"
	must(t, os.WriteFile(filepath.Join(root, key, aside), []byte("damaged"), 0o600))
	st, err := store.New(root, store.Options{Now: func() time.Time { return testNow }})
	must(t, err)
	job := store.Job{PiVersion: testPi, Venue: "local"}
	if s, _ := st.Resolve(key, job, t.TempDir()); !s.Resume {
		t.Fatalf("before the rollback: %v %s", s.Resume, s.Reason)
	}
	before := treeState(t, filepath.Join(root, key), true, true)
	dry := testOpts()
	dry.DryRun = true
	planned, _ := migrate(t, root, true, dry)
	got, sum := migrate(t, root, true, testOpts())
	if s, _ := st.Resolve(key, job, t.TempDir()); !s.Resume {
		t.Errorf("after the rollback: %v %s, want resumed as before", s.Resume, s.Reason)
	}
	for what, r := range map[string]Report{"plan": planned[key], "rollback": got[key]} {
		if r.Action != Failed || !strings.Contains(r.Cause, aside) || len(r.Written) != 0 || len(r.Removed) != 0 {
			t.Errorf("%s: %+v, want failed naming %s, nothing written or removed", what, r, aside)
		}
	}
	if sum.Complete() {
		t.Errorf("the rollback's summary is complete (exit 0): %+v", sum)
	}
	if d := diffStates(before, treeState(t, filepath.Join(root, key), true, true)); d != "" {
		t.Errorf("the key dir changed:\n%s", d)
	}
	if _, err := os.Lstat(filepath.Join(root, key, db.FileName)); err != nil {
		t.Errorf("meta.db: %v", err)
	}
}

// TestRollbackListsTheStoreTempsItSweeps: a promotion temp no record
// names (a promotion killed before its commit) is swept by the rollback's
// roll-forward, under the key's lock. The report and the dry run's plan
// must name it among what is removed: the plan names every action the run
// takes.
func TestRollbackListsTheStoreTempsItSweeps(t *testing.T) {
	root, key := oneKey(t)
	migrate(t, root, false, testOpts())
	tmp := storeTempPrefix + "0123456789abcdef"
	must(t, os.WriteFile(filepath.Join(root, key, tmp), []byte("a killed promotion's temp"), 0o600))
	dry := testOpts()
	dry.DryRun = true
	planned, _ := migrate(t, root, true, dry)
	got, _ := migrate(t, root, true, testOpts())
	if _, err := os.Lstat(filepath.Join(root, key, tmp)); !os.IsNotExist(err) {
		t.Fatalf("the temp is still there (%v): the test no longer shows a sweep", err)
	}
	for what, r := range map[string]Report{"plan": planned[key], "rollback": got[key]} {
		if r.Action != Migrated || !slices.Contains(r.Removed, tmp) {
			t.Errorf("%s: %s, removed %v; want %s among them", what, r.Action, r.Removed, tmp)
		}
	}
}

// TestMovedAsideKeysBothWays: the other moved-aside shapes, in each
// direction, dry run first. An empty meta.db (a lock's) beside the
// moved-aside one: ToDB skips the key, ToLegacy removes only the empty
// file; the key is meta-moved-aside throughout. An undecodable meta.db
// beside it (a repair's target again): both directions fail the key,
// naming meta.db, and change nothing. Each run does what its plan said.
func TestMovedAsideKeysBothWays(t *testing.T) {
	for _, undecodable := range []bool{false, true} {
		root, key := oneKey(t)
		dir := filepath.Join(root, key)
		must(t, os.WriteFile(filepath.Join(dir, store.AsidePrefix+"20261201T000000Z"), []byte("damaged"), 0o600))
		if undecodable {
			must(t, os.WriteFile(filepath.Join(dir, db.FileName), []byte(strings.Repeat("not a bbolt file ", 512)), 0o600))
		} else {
			withDB(t, dir, func(*db.DB) {})
		}
		st, err := store.New(root, store.Options{Now: func() time.Time { return testNow }})
		must(t, err)
		job := store.Job{PiVersion: testPi, Venue: "local"}
		verdict := func() string {
			s, _ := st.Resolve(key, job, t.TempDir())
			return fmt.Sprintf("%v %s", s.Resume, s.Reason)
		}
		was := verdict()
		if was != "false meta-moved-aside" && !(undecodable && was == "false meta-unreadable") {
			t.Fatalf("undecodable %v, before: %s", undecodable, was)
		}
		for _, toLegacy := range []bool{false, true} {
			what := fmt.Sprintf("undecodable %v, %s", undecodable, direction(toLegacy))
			tree := treeState(t, dir, true, true)
			dry := testOpts()
			dry.DryRun = true
			planned, _ := migrate(t, root, toLegacy, dry)
			if d := diffStates(tree, treeState(t, dir, true, true)); d != "" {
				t.Errorf("%s: the dry run changed the key dir:\n%s", what, d)
			}
			did, _ := migrate(t, root, toLegacy, testOpts())
			p, r := planned[key], did[key]
			if p.Action != r.Action || !slices.Equal(p.Removed, r.Removed) || !slices.Equal(p.Written, r.Written) {
				t.Errorf("%s: planned %s w%v r%v, did %s w%v r%v", what, p.Action, p.Written, p.Removed, r.Action, r.Written, r.Removed)
			}
			want := Skipped
			switch {
			case undecodable:
				want = Failed
			case toLegacy:
				want = Migrated
			}
			if r.Action != want || undecodable && !strings.Contains(r.Cause, db.FileName) {
				t.Errorf("%s: %+v, want %s", what, r, want)
			}
			if v := verdict(); v != was {
				t.Errorf("%s: after: %s, was %s", what, v, was)
			}
			if undecodable {
				if d := diffStates(tree, treeState(t, dir, true, true)); d != "" {
					t.Errorf("%s: a failed key changed:\n%s", what, d)
				}
			}
		}
	}
}
