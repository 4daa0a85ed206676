package fleet

import (
	"strings"
	"testing"

	"sessdb/internal/etcdtest"
	"sessdb/migrate"
	"sessdb/store"
	"sessdb/store/transcript"
)

// A migration's cause counts history entries in English: one entry is
// "1 history entry", never "1 history entries", in both directions: the
// conflict --to etcd meets at a key whose history etcd holds with no
// record, and the entries --from etcd carries back at the same
// generation.
func TestAMigrationCountsOneHistoryEntryInTheSingular(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)

	// --to etcd: the fleet's one promotion of the key, its record then
	// removed alone (etcdctl del): one entry under the key's history.
	root := t.TempDir()
	h := newHostBuilder(t, root)
	stray := store.Key("github", "count", "stray")
	h.mustPromote(stray, migJob, "h1", store.PromoteRequest{})
	f.run(stray, "one")
	if _, err := c.Client(t).Delete(t.Context(), f.b.meta.RecordKey(stray)); err != nil {
		t.Fatal(err)
	}
	reports, _ := runMigration(t, true, root, f.b, migOpts())
	if r := reports[stray]; r.Action != Conflict || !strings.Contains(r.Cause, "etcd holds 1 history entry and no record") {
		t.Errorf("to etcd beside a history of one entry and no record: %s (%s); want a conflict naming 1 history entry", r.Action, r.Cause)
	}

	// --from etcd: one refusal the fleet recorded since, carried back.
	root2 := t.TempDir()
	h2 := newHostBuilder(t, root2)
	key := store.Key("github", "count", "refused")
	h2.mustPromote(key, migJob, "h1", store.PromoteRequest{})
	runMigration(t, true, root2, f.b, migOpts())
	sess, _ := f.job(key, "unanswered")
	if res, err := f.s.Promote(sess, store.PromoteRequest{PiVersion: testJob.PiVersion, Require: transcript.Answered}); err != nil || res.Promoted {
		t.Fatalf("the fleet's promotion was not refused: %+v, %v", res, err)
	}
	reports, _ = runMigration(t, false, root2, f.b, migOpts())
	if r := reports[key]; r.Action != migrate.Migrated || !strings.Contains(r.Cause, "1 history entry the fleet recorded since carried") {
		t.Errorf("from etcd with one refusal since: %s (%s); want migrated, 1 history entry carried", r.Action, r.Cause)
	}
}
