package fleet

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// A generation superseded by the record's own promotion is dated by that
// promotion's history entry, which bears the record's date: check's line
// says the history dated it, not that no entry of the history does (a
// history that is there, read with the record, telling an operator to
// look for one gone).
func TestCheckSaysTheRecordsOwnEntryDatesASupersession(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	key := store.Key("github", "superseded", "by the record's promotion")
	now := time.Now()
	var first string
	for i, ago := range []time.Duration{3 * time.Hour, 2 * time.Hour} {
		f.now = now.Add(-ago)
		f.run(key, []string{"one", "two"}[i])
		if i == 0 {
			first = f.recordFile(key)
			if err := os.Chtimes(filepath.Join(f.dir, first), f.now, f.now); err != nil {
				t.Fatal(err)
			}
		}
	}
	f.now = time.Time{}
	found, _ := checkFindings(t, f.b, CheckOptions{})
	fd, ok := found[first]
	if !ok || fd.Kind != KindOrphan {
		t.Fatalf("check found %+v; want gen 1 an orphan", found)
	}
	if want := "gen 1, superseded 2h ago (the key's history); the record names gen 2, promoted 2h ago, 3h old"; !strings.Contains(fd.Detail, want) {
		t.Errorf("gen 1's orphan line: %q; want it to say %q", fd.Detail, want)
	}
}
