package fleet

import (
	"testing"

	"google.golang.org/grpc/codes"

	"sessdb/fleet/shared"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// The transaction that makes a fleet's ID, served and its answer lost (a
// leader change: the claim asks again; a context error: etcd's client
// sends the Txn again itself), makes one ID: the claim marks the dir with
// the ID etcd holds, and the fleet's next workers are let in and promote.
// A claim that took the ID it drew for the one made would mark the dir
// with an ID etcd never held, and refuse every later worker as another
// fleet's.
func TestAFleetIDWhoseAnswerWasLostIsMadeOnce(t *testing.T) {
	etcdtest.Beside(t)
	for _, lost := range []struct {
		name string
		lose func(c *etcdtest.Cluster)
	}{
		{"leader changed", func(c *etcdtest.Cluster) { c.LoseNext(resentTxn, 0, 1) }},
		{"deadline exceeded, sent again", func(c *etcdtest.Cluster) { c.LoseNextAs(resentTxn, 0, 1, codes.DeadlineExceeded) }},
		{"canceled, sent again", func(c *etcdtest.Cluster) { c.LoseNextAs(resentTxn, 0, 1, codes.Canceled) }},
	} {
		t.Run(lost.name, func(t *testing.T) {
			c := etcdtest.Start(t, etcdtest.Options{Members: 1, InProcess: true})
			f := newFixture(t, c)
			t.Cleanup(func() { c.LoseNextAs(resentTxn, 0, 0, codes.DeadlineExceeded) })
			lost.lose(c) // the fleet's first Txn is its ID's
			if err := f.b.Claim(t.Context()); err != nil {
				t.Fatalf("claim: %v", err)
			}
			m, found, err := shared.ReadMark(f.dir)
			id, ierr := f.b.meta.FleetID(t.Context(), false)
			if err != nil || ierr != nil || !found || id == "" || m.ID != id {
				t.Fatalf("the mark %+v (%v, %v), the fleet's ID %q (%v); want the mark to name the ID etcd holds", m, found, err, id, ierr)
			}
			g := f.otherFleet(c, f.prefix) // the fleet's next worker
			g.run(store.Key("github", "mark", "resent "+lost.name), "after")
		})
	}
}
