package fleet

import (
	"os"
	"path/filepath"
	"testing"

	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// Check's summary counts every entry it examined, and among them the
// keys: a name in the transcripts dir that is no key is an entry, not a
// key (store.CheckSummary), as a sessions root's check counts them.
func TestCheckCountsKeysApartFromOtherEntries(t *testing.T) {
	f := newFixture(t, etcdtest.Start1(t))
	f.run(store.Key("github", "check-count", "one"), "one")
	f.run(store.Key("github", "check-count", "two"), "two")
	if err := os.Mkdir(filepath.Join(f.dir, "not-a-key"), 0o700); err != nil {
		t.Fatal(err)
	}
	sum, err := f.b.Check(t.Context(), CheckOptions{}, nil)
	if err != nil || sum.Entries != 3 || sum.Keys != 2 {
		t.Fatalf("check = %+v, %v; want 3 entries, 2 of them keys", sum, err)
	}
}
