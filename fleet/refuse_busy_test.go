package fleet

import (
	"slices"
	"testing"

	"sessdb/gates"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// A superseded job's refusal whose key moves on under it every time it is
// decided (a busy key: another job promotes between each decision and its
// append, as often as the store decides again) is still recorded, once,
// and the job told superseded: Refuse's doc, "a key that moved on once
// more supersedes it all the more, so the refusal is recorded at the
// newer record; without that, jobs on a busy key would report a refusal
// that lost a race as promote-failed". The store decides a conflict again
// once (its second attempt), so a key that moves on under each of its two
// attempts is what tells a refusal re-based in place from one handed back
// as a conflict.
func TestASupersededRefusalOnAKeyThatMovesOnUnderEachDecisionIsRecorded(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	key := store.Key("github", "acme/refusals", "busy")
	f.run(key, "m0")
	sess, _ := f.job(key, "late")
	f.run(key, "m1") // the job is superseded: its base is gen 1, the key at 2
	moves := 0
	f.b.hook = func(point, k string) error {
		if point == hookRefuse && k == key && moves < 2 {
			moves++
			f.run(key, "busy") // each decision's record moves on before its append
		}
		return nil
	}
	res, err := f.promote(sess)
	f.b.hook = nil
	if err != nil || res.Reason != gates.Superseded {
		t.Fatalf("promote = %+v, %v; want superseded (the key moved on %d times under the refusal)", res, err, moves)
	}
	st, err := f.b.meta.Get(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	var at []uint64
	for _, e := range st.History {
		if e.Ticket == sess.Ticket {
			at = append(at, e.Gen)
		}
	}
	want := st.Record.Transcript.Gen
	if !slices.Equal(at, []uint64{want}) {
		t.Fatalf("the refusal is in the history at gens %v; want once, at the newest record's gen %d", at, want)
	}
}
