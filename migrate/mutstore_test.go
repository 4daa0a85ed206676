package migrate

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/db"
	"sessdb/store"
)

// Tests a mutation sweep of migrate showed missing (notes of helper
// mutstore).

// A meta.db temp whose flock is held is a meta.db being made right now,
// whatever its age: neither direction's sweep removes it or lists it.
func TestTheSweepLeavesAMetaDBTempWhoseFlockIsHeld(t *testing.T) {
	root, keys := newCorpus(t)
	key := keyNamed(keys, "plain")
	p := filepath.Join(root, key, db.TempPrefix+"0123456789abcdef")
	must(t, os.WriteFile(p, []byte("a meta.db being made"), 0o600))
	old := time.Now().Add(-2 * tempGrace)
	must(t, os.Chtimes(p, old, old))
	f, err := os.Open(p)
	must(t, err)
	defer f.Close()
	must(t, unix.Flock(int(f.Fd()), unix.LOCK_EX))
	for _, toLegacy := range []bool{false, true} {
		got, _ := migrate(t, root, toLegacy, testOpts())
		if r := got[key]; slices.Contains(r.Removed, db.TempPrefix+"0123456789abcdef") {
			t.Errorf("%s: removed %v, a temp whose flock is held among them", direction(toLegacy), r.Removed)
		}
		if _, err := os.Lstat(p); err != nil {
			t.Fatalf("%s: the temp being made is gone: %v", direction(toLegacy), err)
		}
	}
}

// A migration of an empty root names the setting: the sessions root is
// unset.
func TestAMigrationOfNoRootSaysTheRootIsUnset(t *testing.T) {
	for _, run := range []func(string, Options, func(Report) error) (Summary, error){ToDB, ToLegacy} {
		if _, err := run("", testOpts(), nil); !errors.Is(err, store.ErrSessionsDirUnset) {
			t.Errorf("a migration of \"\" = %v; want ErrSessionsDirUnset", err)
		}
	}
}

// A migration report's lists are written as they are, [] when empty and
// never null (docs/json.md), whichever of them holds something.
func TestAReportsListsAreWrittenAsTheyAre(t *testing.T) {
	b, err := json.Marshal(Report{Key: "k", Action: Migrated, Removed: []string{".meta.db.tmp-01"}})
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	must(t, json.Unmarshal(b, &got))
	if r, ok := got["removed"].([]any); !ok || len(r) != 1 || r[0] != ".meta.db.tmp-01" {
		t.Errorf("removed = %#v in %s; want [\".meta.db.tmp-01\"]", got["removed"], b)
	}
	for _, k := range []string{"oddities", "written"} {
		if l, ok := got[k].([]any); !ok || len(l) != 0 {
			t.Errorf("%s = %#v in %s; want []", k, got[k], b)
		}
	}
}
