package fleet

import (
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"sessdb/db"
	"sessdb/internal/etcdtest"
	"sessdb/internal/faults"
	"sessdb/migrate"
	"sessdb/store"
)

// --from etcd failed at each step of its write names in the key's report
// what is in place, not the plan: nothing before the commit, meta.db once
// it landed (a promotion in flight every reader serves), current.jsonl
// too once renamed. Before, every failure said written [current.jsonl
// meta.db], a key whose commit never happened included.
func TestMigrateFromEtcdFailedNamesWhatWasWritten(t *testing.T) {
	c := etcdtest.Start1(t)
	want := map[faults.Point][]string{
		faults.FromEtcdLocked:    nil,
		faults.FromEtcdTemp:      nil,
		faults.FromEtcdCommitted: {db.FileName},
		faults.FromEtcdRenamed:   {store.TranscriptName, db.FileName},
		faults.FromEtcdSynced:    {store.TranscriptName, db.FileName},
	}
	errFault := errors.New("injected")
	for _, p := range []faults.Point{faults.FromEtcdLocked, faults.FromEtcdTemp, faults.FromEtcdCommitted, faults.FromEtcdRenamed, faults.FromEtcdSynced} {
		t.Run(string(p), func(t *testing.T) {
			f := newFixture(t, c)
			key := store.Key("github", "acme/widget", "failed written")
			f.run(key, "the fleet's")
			root := filepath.Join(t.TempDir(), "root")
			fired := false
			t.Cleanup(func() { faults.Set(nil) })
			faults.Set(func(q faults.Point) error {
				if q == p && !fired {
					fired = true
					return errFault
				}
				return nil
			})
			got, _ := runMigration(t, false, root, f.b, migOpts())
			faults.Set(nil)
			if r := got[key]; !fired || r.Action != migrate.Failed || !slices.Equal(r.Written, want[p]) {
				t.Errorf("fired %v: %+v; want failed, written %q", fired, r, want[p])
			}
		})
	}
}
