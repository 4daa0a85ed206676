package fleet

import (
	"path/filepath"
	"strings"
	"testing"

	"sessdb/internal/etcdtest"
	"sessdb/migrate"
	"sessdb/store"
)

// migrate --from etcd keeps of its listing each key and whether it could
// be read: a record under a name that is no key is skipped as one, and a
// record that does not decode is failed as the fleet reads it
// (meta-unreadable), left in etcd. Both are judged from the listing, not
// from a read of the key again, which says neither.
func TestMigrateFromEtcdJudgesWhatItsListingCouldNotRead(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	good := store.Key("github", "migrate-listed", "good")
	f.run(good, "a")
	notAKey, damaged := "not-a-key", store.Key("github", "migrate-listed", "damaged")
	for _, name := range []string{notAKey, damaged} {
		if _, err := c.Client(t).Put(t.Context(), f.prefix+"/record/"+name, "not a record"); err != nil {
			t.Fatal(err)
		}
	}
	reports, sum := runMigration(t, false, filepath.Join(t.TempDir(), "root"), f.b, migOpts())
	if r := reports[notAKey]; r.Action != migrate.Skipped || !strings.Contains(r.Cause, "not a key") {
		t.Errorf("a record under a name that is no key: %+v; want skipped, not a key", r)
	}
	if r := reports[damaged]; r.Action != migrate.Failed || !strings.Contains(r.Cause, "meta-unreadable") {
		t.Errorf("a record that does not decode: %+v; want failed, meta-unreadable", r)
	}
	if r := reports[good]; r.Action != migrate.Migrated || sum.Migrated != 1 {
		t.Errorf("the key beside them: %+v (%+v); want it migrated", r, sum)
	}
}
