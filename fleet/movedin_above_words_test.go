package fleet

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sessdb/fleet/etcdmeta"
	"sessdb/fleet/shared"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// A key moved in with a history that names a generation above its
// record's (Record.HistoryGen: migrate --to etcd carrying a sessions
// root's key whose committed promotion lost its temp) never began again
// from no record: check's line for a file above its record's must not
// say it did. It said "an earlier incarnation's (the key's history
// reached gen 7 before the key began again from no record)" of a
// fleet promotion that died before its commit.
func TestAMovedInHistoryAboveTheRecordIsNotCalledAnEarlierIncarnation(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "moved-in", "above the record, words")
	now := time.Now()
	stamp := func(name string, at time.Time) {
		t.Helper()
		if err := os.Chtimes(filepath.Join(f.dir, name), at, at); err != nil {
			t.Fatal(err)
		}
	}
	name, size, crc, err := shared.Write(context.Background(), f.dir, key, 5, strings.NewReader(testHeader))
	if err != nil {
		t.Fatal(err)
	}
	old := now.Add(-3 * time.Hour)
	stamp(name, old)
	rec := etcdmeta.Record{Transcript: &etcdmeta.Transcript{Gen: 5, Size: size, CRC32C: uint64(crc), PromotedAt: old.UnixNano(), File: name}}
	hist := []etcdmeta.HistoryEntry{{Seq: 1, Gen: 5, At: old.UnixNano()}, {Seq: 2, Gen: 7, At: now.Add(-2 * time.Hour).UnixNano()}}
	if _, err := f.b.meta.Create(context.Background(), key, rec, hist); err != nil {
		t.Fatal(err)
	}
	// A fleet promotion of the key (numbered from the history: gen 8)
	// that died before its commit, an hour ago.
	dead, _, _, err := shared.Write(context.Background(), f.dir, key, 8, strings.NewReader(testHeader))
	if err != nil {
		t.Fatal(err)
	}
	stamp(dead, now.Add(-time.Hour))

	found, _ := checkFindings(t, f.b, CheckOptions{})
	fd, ok := found[dead]
	if !ok || fd.Kind != KindOrphan {
		t.Fatalf("check found %+v at the dead promotion's file; want an orphan", fd)
	}
	for _, bad := range []string{"began again from no record", "reached gen 7"} {
		if strings.Contains(fd.Detail, bad) {
			t.Errorf("the dead promotion's line: %q; it says %q of a key moved in with its history", fd.Detail, bad)
		}
	}
	want := "gen 8, above the record's: a promotion that lost its commit or died before it, or an earlier incarnation's whose history is gone (the key was moved in with a history that names gen 7, a generation its record never held here); the record names gen 5, promoted 3h ago"
	if !strings.Contains(fd.Detail, want) {
		t.Errorf("the dead promotion's line: %q; want it to say %q", fd.Detail, want)
	}
	res, err := f.b.Reap(context.Background(), ReapOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Swept) != 1 || res.Swept[0] != dead {
		t.Errorf("reap swept %q; want the dead promotion's file %s alone", res.Swept, dead)
	}
}
