package fleet

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sessdb/gates"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// Tickets that outlive a move of their root into a fleet and back
// (migrate --to etcd, --from etcd into the old root, or into a new one
// at its path). A ticket names its root: on the fleet every ticket of the
// root is refused as another root's (and the fleet's on the root), with
// nothing written. Back on the root, the history came with the key, so a
// ticket is judged as if it had never left: a stale one is superseded by
// what the fleet promoted meanwhile, a retried one repeats (never a second
// generation), and one on a key nothing promoted since promotes.
func TestTicketsAcrossAMoveToEtcdAndBack(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	for _, into := range []string{"the old root", "a new root at its path"} {
		t.Run(into, func(t *testing.T) {
			f := newFixture(t, c)
			root := filepath.Join(t.TempDir(), "sessions")
			hs, err := store.New(root, store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			type job struct {
				sess store.Session
				dir  string
			}
			run := func(s *store.Store, key, marker string) job {
				t.Helper()
				sess, dir := resolveOn(t, s, key)
				appendMarker(t, dir, marker)
				return job{sess, dir}
			}
			promote := func(s *store.Store, j job) (store.PromoteResult, error) {
				t.Helper()
				return s.Promote(j.sess, store.PromoteRequest{PiVersion: testJob.PiVersion})
			}
			mustPromote := func(s *store.Store, j job, gen uint64) {
				t.Helper()
				if res, err := promote(s, j); err != nil || !res.Promoted || res.Repeat || res.Gen != gen {
					t.Fatalf("promote: %+v, %v; want gen %d", res, err, gen)
				}
			}
			moved, still := store.Key("github", "tickets", "moved"), store.Key("github", "tickets", "still")
			for _, key := range []string{moved, still} {
				mustPromote(hs, run(hs, key, "g1"), 1)
				mustPromote(hs, run(hs, key, "g2"), 2)
			}
			retried := run(hs, moved, "g3")
			mustPromote(hs, retried, 3)
			stale := run(hs, moved, "stale")     // on gen 3; the fleet promotes gen 4
			current := run(hs, still, "current") // on gen 2; nothing promotes it since
			if _, err := ToEtcd(t.Context(), root, f.b, MigrateOptions{}, func(MigrateReport) error { return nil }); err != nil {
				t.Fatal(err)
			}

			fleetFiles := filesUnder(t, f.dir)
			for name, j := range map[string]job{"retried": retried, "stale": stale, "current": current} {
				if res, err := promote(f.s, j); !errors.Is(err, store.ErrWrongRoot) || res.Promoted {
					t.Errorf("the root's %s ticket on the fleet: %+v, %v; want ErrWrongRoot", name, res, err)
				}
			}
			if filesUnder(t, f.dir) != fleetFiles {
				t.Error("a ticket of the root wrote into the fleet's transcripts dir")
			}
			onFleet := run(f.s, moved, "g4")
			mustPromote(f.s, onFleet, 4)

			if into != "the old root" {
				if err := os.Rename(root, root+".old"); err != nil {
					t.Fatal(err)
				}
				if hs, err = store.New(root, store.Options{}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := FromEtcd(t.Context(), f.b, root, MigrateOptions{}, func(MigrateReport) error { return nil }); err != nil {
				t.Fatal(err)
			}
			held, err := os.ReadFile(filepath.Join(root, moved, store.TranscriptName))
			if err != nil || !bytes.Contains(held, []byte("g4")) {
				t.Fatalf("the fleet's gen 4 was not brought back (%v)", err)
			}
			if res, err := promote(hs, onFleet); !errors.Is(err, store.ErrWrongRoot) || res.Promoted {
				t.Errorf("the fleet's ticket on the root: %+v, %v; want ErrWrongRoot", res, err)
			}
			if res, err := promote(hs, stale); err != nil || res.Promoted || res.Reason != gates.Superseded || res.SupersededBy != 4 {
				t.Errorf("the stale ticket back on the root: %+v, %v; want superseded by gen 4", res, err)
			}
			if res, err := promote(hs, retried); err != nil || !res.Promoted || !res.Repeat || res.Gen != 3 {
				t.Errorf("the retried ticket back on the root: %+v, %v; want a repeat of gen 3", res, err)
			}
			if got, _ := os.ReadFile(filepath.Join(root, moved, store.TranscriptName)); !bytes.Equal(got, held) {
				t.Error("a ticket from before the move changed the key the fleet moved on")
			}
			mustPromote(hs, current, 3)
		})
	}
}

// filesUnder lists every path under dir with its size.
func filesUnder(t *testing.T, dir string) string {
	t.Helper()
	var b bytes.Buffer
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil {
			fmt.Fprintf(&b, "%s %d\n", p, fi.Size())
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// A fleet key reaped and made anew by a cold job starts its generations
// again at 1 (the reap deletes its record and history): a stale ticket
// names that generation number, but its base's revision is the old
// record's, and etcd never gives a revision twice. The stale ticket, and
// a retry of the promotion the reap took, are superseded; the new key is
// untouched.
func TestStaleTicketOnAFleetKeyMadeAnew(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	f.now = time.Now()
	key := store.Key("github", "tickets", "reaped")
	promote := func(sess store.Session) store.PromoteResult {
		t.Helper()
		res, err := f.s.Promote(sess, store.PromoteRequest{PiVersion: testJob.PiVersion})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	job := func(marker string) store.Session {
		t.Helper()
		sess, dir := resolveOn(t, f.s, key)
		appendMarker(t, dir, marker)
		return sess
	}
	if res := promote(job("g1")); res.Gen != 1 {
		t.Fatalf("first promotion: %+v", res)
	}
	stale := job("stale")
	retried := job("g2")
	if res := promote(retried); res.Gen != 2 {
		t.Fatalf("second promotion: %+v", res)
	}
	later := func() time.Time { return f.now.Add(15 * 24 * time.Hour) }
	if r, err := f.b.Reap(t.Context(), ReapOptions{TTL: 14 * 24 * time.Hour, Now: later}); err != nil || len(r.Removed) != 1 {
		t.Fatalf("reap: %+v, %v", r, err)
	}
	anew := job("anew")
	if anew.Resume {
		t.Fatalf("the reaped key resumed: %+v", anew)
	}
	if res := promote(anew); !res.Promoted || res.Gen != 1 {
		t.Fatalf("the key made anew: %+v, want gen 1", res)
	}
	if anew := job("probe"); anew.Base.Gen != stale.Base.Gen {
		t.Fatalf("the key made anew is at gen %d, the stale base %d: no reuse to test", anew.Base.Gen, stale.Base.Gen)
	}
	for name, sess := range map[string]store.Session{"stale": stale, "retried": retried} {
		if res := promote(sess); res.Promoted || res.Reason != gates.Superseded || res.SupersededBy != 1 {
			t.Errorf("the %s ticket on the key made anew: %+v, want superseded by gen 1", name, res)
		}
	}
	if probe := job("after"); probe.Base.Gen != 1 || !probe.Resume {
		t.Errorf("after the stale tickets the key resolves %+v, want gen 1 resumed", probe)
	}
}
