package etcdmeta

import (
	"fmt"
	"testing"

	"sessdb/internal/etcdtest"
)

// A renumber whose commit lands and whose answer is then lost (a leader
// change overtaking it once applied, a connection the keepalive closes
// under it) is the renumber, landed, on one endpoint as on several: its
// commit is sent again on its base, within its request timeout, and the
// try that finds its own entries in place is the answer. Before, the
// first lost answer was the answer: RenumberHistory returned etcd
// unavailable of a history it had numbered again, and check --repair
// stopped its walk saying so (the next check found nothing to do).
func TestARenumberWhoseAnswerIsLostIsTheRenumberLanded(t *testing.T) {
	etcdtest.Beside(t)
	for _, members := range []int{1, 3} {
		t.Run(fmt.Sprintf("%d endpoints", members), func(t *testing.T) {
			c := etcdtest.Start(t, etcdtest.Options{Members: members, InProcess: true})
			s := open(t, c)
			key := newKey()
			rev, ring := createAtTheTop(t, s, key)
			// The renumber's read is its first Txn, its commit the second.
			c.LoseNext("/etcdserverpb.KV/Txn", 1, 1)
			did, err := s.RenumberHistory(ctx(t), key, rev)
			if err != nil || did != (Renumbered{Kept: HistoryLimit}) {
				t.Errorf("RenumberHistory whose commit's answer was lost = %+v, %v; want %d kept (it landed)", did, err, HistoryLimit)
			}
			st, err := s.Get(ctx(t), key)
			if err != nil || st.Rev != rev || len(st.History) != HistoryLimit {
				t.Fatalf("after: rev %d (want %d), %d entries, %v", st.Rev, rev, len(st.History), err)
			}
			for i, e := range st.History {
				if e.Seq != uint64(i+1) || e.Ticket != ring[i].Ticket {
					t.Fatalf("entry %d: seq %d ticket %s; want seq %d ticket %s", i, e.Seq, e.Ticket, i+1, ring[i].Ticket)
				}
			}
		})
	}
}
