package fleet

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// The whole of check's line for a generation file of a key with a history
// and no record: what the file most likely is, and that no resolve reads
// it (a resolve cold-starts such a key), word for word.
func TestCheckSaysAllOfAStrayHistorysOrphanLine(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "stray-history", "orphan words")
	f.run(key, "one")
	file := f.recordFile(key)
	if _, err := c.Client(t).Delete(t.Context(), f.prefix+"/record/"+key); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(filepath.Join(f.dir, file), old, old); err != nil {
		t.Fatal(err)
	}
	found, _ := checkFindings(t, f.b, CheckOptions{})
	want := "gen 1; the key has no record but a history (its record removed alone, with etcdctl or another tool: a generation it named, or a promotion that lost its commit or never made it); no resolve reads it, 2h old; no record needs it (reap removes it)"
	if fd, ok := found[file]; !ok || fd.Detail != want {
		t.Errorf("the orphan line: %+v\nwant the detail %q", fd, want)
	}
}
