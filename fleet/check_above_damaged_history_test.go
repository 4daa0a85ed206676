package fleet

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sessdb/fleet/shared"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// A file above the record's generation of a key whose history does not
// decode: nothing tells an earlier incarnation's file from a promotion's
// that never committed, and the file is judged by the record's date
// (needs, with no history read). check's line names both, says the
// history could not be read and which date judged it, and reap removes
// the file it names. Before, the line named both and no more: nothing
// said why the history gave no date (mutnew49's D16, the words "or an
// earlier incarnation's" dropped, lived).
func TestCheckNamesAFileAboveTheRecordOfAKeyWhoseHistoryDoesNotDecode(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "above", "damaged history")
	f.now = time.Now().Add(-2 * time.Hour)
	f.run(key, "one")
	f.now = time.Time{}
	if _, err := c.Client(t).Put(t.Context(), f.prefix+"/history/"+key+"/0000000000000002", "\xc1 not msgpack"); err != nil {
		t.Fatal(err)
	}
	dead, _, _, err := shared.Write(context.Background(), f.dir, key, 2, strings.NewReader(testHeader))
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(filepath.Join(f.dir, dead), old, old); err != nil {
		t.Fatal(err)
	}
	found, _ := checkFindings(t, f.b, CheckOptions{})
	fd, ok := found[dead]
	if want := "gen 2, above the record's: a promotion that lost its commit or died before it, or an earlier incarnation's (the key's history could not be read to tell them apart: judged by the record's date); the record names gen 1, promoted 2h ago, 2h old; no record needs it (reap removes it)"; !ok || fd.Detail != want {
		t.Errorf("the file above the record: %+v\nwant the detail %q", fd, want)
	}
	res, err := f.b.Reap(context.Background(), ReapOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Swept) != 1 || res.Swept[0] != dead {
		t.Errorf("reap swept %q; want the file check named, %s", res.Swept, dead)
	}
}

// A generation below the record's of a key whose history does not decode
// is judged by the record's date too (needs, with no history read), and
// its line says why no entry of the history dated it, as a file above the
// record's does. Before, it said only "gen 1; the record names gen 2,
// promoted 2h ago": nothing of the history, where every other line of a
// generation below the record's says it was superseded and by which date.
func TestCheckNamesAGenerationBelowTheRecordOfAKeyWhoseHistoryDoesNotDecode(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "below", "damaged history")
	f.now = time.Now().Add(-2 * time.Hour)
	f.run(key, "one")
	f.run(key, "two")
	f.now = time.Time{}
	if _, err := c.Client(t).Put(t.Context(), f.prefix+"/history/"+key+"/0000000000000002", "\xc1 not msgpack"); err != nil {
		t.Fatal(err)
	}
	var first string
	for _, name := range f.files(key) {
		if _, gen, ok := shared.ParseName(name); ok && gen == 1 {
			first = name
		}
	}
	if first == "" {
		t.Fatalf("no file of gen 1 among %q", f.files(key))
	}
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(filepath.Join(f.dir, first), old, old); err != nil {
		t.Fatal(err)
	}
	found, _ := checkFindings(t, f.b, CheckOptions{})
	fd, ok := found[first]
	if want := "gen 1, superseded (the key's history could not be read to date it: judged by the record's date); the record names gen 2, promoted 2h ago, 2h old; no record needs it (reap removes it)"; !ok || fd.Detail != want {
		t.Errorf("the file below the record: %+v\nwant the detail %q", fd, want)
	}
	res, err := f.b.Reap(context.Background(), ReapOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Swept) != 1 || res.Swept[0] != first {
		t.Errorf("reap swept %q; want the file check named, %s", res.Swept, first)
	}
}
