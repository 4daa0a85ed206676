package fleet

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sessdb/internal/etcdtest"
	"sessdb/migrate"
	"sessdb/store"
)

// The round trip the docs describe, and again: a root moved into the
// fleet, promoted there, moved back into its own root (brought forward),
// promoted on the host, then moved into the fleet once more. The fleet's
// record is never written over by the host's newer generation, nor is the
// key called already (--to etcd creates records only): it is a conflict
// naming both generations, exit 1, and the key nothing promoted is
// already there. Tickets of every era are judged by what the key they land
// on holds: the host's stale one superseded, the fleet's one on a key
// still at its base promoted on the fleet. (The help said a key dir that
// descends from etcd's generation is already to --to etcd: a host's newer
// conversation never moved, and the run exit 0.)
func TestMigrateThereBackAndThereAgain(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	root := filepath.Join(t.TempDir(), "sessions")
	h := newHostBuilder(t, root)
	moved, still := store.Key("github", "seq", "moved-on"), store.Key("github", "seq", "still")
	for _, k := range []string{moved, still} {
		h.mustPromote(k, migJob, "h1", store.PromoteRequest{})
	}
	if _, sum := runMigration(t, true, root, f.b, migOpts()); sum.Migrated != 2 || !sum.Complete() {
		t.Fatalf("to etcd: %+v", sum)
	}
	f.now = migNow
	f.run(moved, "fleet 2")
	fleetTicket, _ := f.job(still, "fleet on gen 1") // promoted after the last move
	if reports, sum := runMigration(t, false, root, f.b, migOpts()); !sum.Complete() || reports[moved].Action != migrate.Migrated || reports[still].Action != migrate.Already {
		t.Fatalf("from etcd into its own root: %+v %+v", sum, reports)
	}
	h.now = migNow
	hostStale := jobOn(t, h.s, moved, "host stale") // on gen 2, superseded by gen 3
	h.mustPromote(moved, migJob, "host 3", store.PromoteRequest{})
	if res, err := h.s.Promote(hostStale.sess, store.PromoteRequest{PiVersion: migPi}); err != nil || res.Promoted || res.SupersededBy != 3 {
		t.Errorf("the host's stale ticket: %+v, %v; want superseded by gen 3", res, err)
	}

	fleetBefore := etcdOf(t, f.c, f.prefix)
	reports, sum := runMigration(t, true, root, f.b, migOpts())
	if r := reports[moved]; r.Action != Conflict || !strings.Contains(r.Cause, "gen 2") || !strings.Contains(r.Cause, "gen 3") {
		t.Errorf("to etcd again, a key promoted on the host since it came back: %s (%s), want a conflict naming both gens", r.Action, r.Cause)
	}
	if r := reports[still]; r.Action != migrate.Already {
		t.Errorf("to etcd again, a key nothing promoted: %s (%s), want already", r.Action, r.Cause)
	}
	if sum.Complete() || sum.Conflicts != 1 {
		t.Errorf("to etcd again: %+v, want one conflict", sum)
	}
	if d := diffMaps(fleetBefore, etcdOf(t, f.c, f.prefix)); d != "" {
		t.Errorf("to etcd again changed etcd:\n%s", d)
	}
	f.holds(moved, "fleet 2", 2)
	if res, err := f.promote(fleetTicket); err != nil || !res.Promoted || res.Gen != 2 {
		t.Errorf("the fleet's ticket on a key still at its base: %+v, %v; want promoted at gen 2", res, err)
	}
	hs, err := store.New(root, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sess, dir := resolveOn(t, hs, moved)
	if m := markers(stagedOf(t, dir)); !sess.Resume || sess.Gen() != 3 || m[len(m)-1] != "host 3" {
		t.Errorf("the root resumes %v at gen %d (%s), want host 3 at gen 3", m, sess.Gen(), sess.Reason)
	}
}

type hostJob struct {
	sess store.Session
	dir  string
}

// jobOn resolves key on s and stages marker onto what it was handed.
func jobOn(t *testing.T, s *store.Store, key, marker string) hostJob {
	t.Helper()
	jobDir := t.TempDir()
	sess, err := s.Resolve(key, migJob, jobDir)
	if err != nil {
		t.Fatal(err)
	}
	data := stagedOf(t, jobDir)
	if len(data) == 0 {
		t.Fatalf("%s: a cold start, want a resume", key)
	}
	if err := os.WriteFile(filepath.Join(jobDir, store.StagedDirName, store.TranscriptName), append(data, markerLine(marker)...), 0o600); err != nil {
		t.Fatal(err)
	}
	return hostJob{sess, jobDir}
}
