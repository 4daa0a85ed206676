package fleet

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"sessdb/internal/etcdtest"
	"sessdb/migrate"
	"sessdb/store"
)

// migrate --to etcd after an operator's etcdctl del of a key's record and
// history (the way fleet.md gives to keep a key dir's conversation over
// the fleet's) dates the new record from the key dir: its promotion time
// is the key dir's last promotion, which is before the del. Decided: that
// is the date wanted. A migration moves the record the store serves, so a
// key's jobs get the verdicts they got on the root (its TTL counts from
// that promotion, not from the move), and the way back (--from etcd into
// the same root) finds it already, where a stamp of the move's would be
// another promotion time, a conflict for a key with no history to tell
// its lineage by. The files of the incarnation the del removed are then
// judged by dates from before the del, as any key's files are once its
// record is removed (no grace runs from a del, which etcd does not date):
// a reap sweeps them once they are past the in-flight window, and keeps
// the new record's file. This pins it (tests only).
func TestAMigrationAfterAnEtcdctlDelDatesTheRecordFromTheKeyDir(t *testing.T) {
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "migrate-after-del", "one")
	root := promotedOnHost(t, key, "a")
	if got, _ := runMigration(t, true, root, f.b, migOpts()); got[key].Action != migrate.Migrated {
		t.Fatalf("the first move: %+v", got[key])
	}
	if res := f.run(key, "fleet 2"); !res.Promoted {
		t.Fatalf("the fleet's promotion: %+v", res)
	}
	earlier := f.files(key) // the removed incarnation's: gen 1 as moved, gen 2
	if len(earlier) != 2 {
		t.Fatalf("the key's files before the del: %v; want two", earlier)
	}
	cli := c.Client(t)
	if _, err := cli.Delete(context.Background(), f.prefix+"/history/"+key+"/", clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Delete(context.Background(), f.prefix+"/record/"+key); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()

	got, _ := runMigration(t, true, root, f.b, migOpts())
	if r := got[key]; r.Action != migrate.Migrated {
		t.Fatalf("the move after the del: %s (%s); want migrated", r.Action, r.Cause)
	}
	sc, _ := hostState(t, filepath.Join(root, key))
	st, err := f.b.meta.GetRecord(context.Background(), key)
	if err != nil || st.Record.Transcript == nil {
		t.Fatalf("the record after the move: %+v, %v", st, err)
	}
	at := time.Unix(0, st.Record.Transcript.PromotedAt)
	if st.Record.Transcript.PromotedAt != sc.Transcript.PromotedAt || !at.Before(deleted) {
		t.Errorf("the new record is dated %v; want the key dir's last promotion, %v, before the del (%v)",
			at, time.Unix(0, sc.Transcript.PromotedAt), deleted)
	}
	moved := f.recordFile(key)

	// The way back finds the key already there.
	if back, _ := runMigration(t, false, root, f.b, migOpts()); back[key].Action != migrate.Already {
		t.Errorf("--from etcd into the same root: %s (%s); want already", back[key].Action, back[key].Cause)
	}

	// Two hours on, past the in-flight window and an hour's grace from
	// the key dir's promotion (moments before the del), the removed
	// incarnation's files go; the new record's stays.
	later := time.Now().Add(2 * time.Hour)

	// Check's words for the removed incarnation's gen 2, above the new
	// record's gen 1, say what the key's history shows: it names no
	// generation above the record's back to the key dir's promotion.
	// They do not say that no record has named gen 2 since then: the
	// fleet's record named it after that date, before the del, and the
	// history the move brought in is the sessions root's, which knows
	// nothing of the fleet's records.
	found, _ := checkFindings(t, f.b, CheckOptions{Now: func() time.Time { return later }})
	fd, ok := found[earlier[1]]
	if !ok || fd.Kind != KindOrphan {
		t.Fatalf("check found %+v; want the removed incarnation's gen 2 (%s) an orphan", found, earlier[1])
	}
	if strings.Contains(fd.Detail, "no record has named it") {
		t.Errorf("gen 2's orphan line: %q; says no record has named it since the key dir's date, where the fleet's record named it after", fd.Detail)
	}
	if want := "gen 2, above the record's: a promotion that lost its commit or died before it, or an earlier incarnation's whose history is gone; the key's history, back to 2h ago, names no generation above the record's; the record names gen 1, promoted 2h ago"; !strings.Contains(fd.Detail, want) {
		t.Errorf("gen 2's orphan line: %q; want it to say %q", fd.Detail, want)
	}
	res, err := f.b.Reap(t.Context(), ReapOptions{Now: func() time.Time { return later }})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range earlier {
		if !slices.Contains(res.Swept, name) {
			t.Errorf("reap swept %v; want the removed incarnation's %s among them", res.Swept, name)
		}
	}
	if files := f.files(key); !slices.Equal(files, []string{moved}) {
		t.Errorf("the key's files after the reap: %v; want the new record's %s alone", files, moved)
	}
	f.holds(key, "a", 1)
}
