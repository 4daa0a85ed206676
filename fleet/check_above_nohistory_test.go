package fleet

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"sessdb/fleet/shared"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// A file above the record's generation of a key whose history is gone
// (removed by hand, the record kept): no entry dates it, and check's line
// says what it can be and the record's date alone, with no date from the
// history it does not have.
func TestCheckNamesAFileAboveTheRecordOfAKeyWithNoHistory(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "above", "no history")
	f.now = time.Now().Add(-2 * time.Hour)
	f.run(key, "one")
	f.now = time.Time{}
	if _, err := c.Client(t).Delete(t.Context(), f.prefix+"/history/"+key+"/", clientv3.WithPrefix()); err != nil {
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
	if want := "gen 2, above the record's: a promotion that lost its commit or died before it, or an earlier incarnation's whose history is gone; the record names gen 1, promoted 2h ago, 2h old; no record needs it (reap removes it)"; !ok || fd.Detail != want {
		t.Errorf("the file above the record: %+v\nwant the detail %q", fd, want)
	}
}
