package fleet

import (
	"os"
	"strings"
	"testing"

	"sessdb/internal/etcdtest"
	"sessdb/migrate"
	"sessdb/store"
	"sessdb/store/transcript"
)

// migrate --to etcd that must read the fleet's generation to tell
// whether it descends from the key dir's (the key dir's newest history
// entry is not in etcd's: a refusal recorded on the root after the move)
// and cannot, the transcripts dir being gone, fails the key naming the
// dir: it is not a conflict, which says the two diverged. With the dir
// there, the same run finds the key already (the fleet promoted it
// since). Before: "conflict: etcd holds gen 2 ..., which it does not
// descend from", on a guess.
func TestMigrateToEtcdThatCannotReadTheFleetsFileIsNoConflict(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	root := t.TempDir()
	hs, err := store.New(root, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	key := store.Key("github", "dir-away-descends", "x")
	sess, jobDir := resolveOn(t, hs, key)
	appendMarker(t, jobDir, "one")
	if res, err := hs.Promote(sess, store.PromoteRequest{PiVersion: testJob.PiVersion}); err != nil || !res.Promoted {
		t.Fatalf("promote on the root: %+v, %v", res, err)
	}
	if got, sum := runMigration(t, true, root, f.b, MigrateOptions{}); sum.Migrated != 1 {
		t.Fatalf("the move: %+v, %v", sum, got)
	}
	f.run(key, "two") // the fleet promotes gen 2 from gen 1
	// A refusal on the root after the move: its newest history entry is
	// one etcd's history does not hold.
	sess, jobDir = resolveOn(t, hs, key)
	appendMarker(t, jobDir, "unanswered")
	if res, err := hs.Promote(sess, store.PromoteRequest{PiVersion: testJob.PiVersion, Require: transcript.Answered}); err != nil || res.Reason != "run-incomplete" {
		t.Fatalf("the refusal on the root: %+v, %v", res, err)
	}

	away := f.dir + ".away"
	if err := os.Rename(f.dir, away); err != nil {
		t.Fatal(err)
	}
	got, _ := runMigration(t, true, root, f.b, MigrateOptions{})
	if err := os.Rename(away, f.dir); err != nil {
		t.Fatal(err)
	}
	if r := got[key]; r.Action != migrate.Failed || !strings.Contains(r.Cause, "the transcripts dir is unavailable") || !strings.Contains(r.Cause, f.dir) {
		t.Errorf("with the dir gone: %+v; want failed, naming the dir", r)
	}
	got, _ = runMigration(t, true, root, f.b, MigrateOptions{})
	if r := got[key]; r.Action != migrate.Already {
		t.Errorf("with the dir back: %+v; want already (the fleet promoted it since)", r)
	}
}
