package store

import (
	"testing"

	"sessdb/gates"
)

// A promotion committed and then lost before its rename (its temp gone,
// or damaged), after which another job, resolved on the generation
// before it (what the key holds), promotes: the key's transcript is that
// job's, built on the generation before the lost one, and holds nothing
// of the lost run. The lost promotion's retry with its own ticket is then
// no repeat (the key never held its generation since), and its base is
// gone: superseded by the other job's generation, its run left in its
// job dir.
func TestRetryOfALostPromotionAfterAnotherJobPromotedIsSuperseded(t *testing.T) {
	for name, lose := range loseTemp {
		t.Run(name, func(t *testing.T) {
			s, root, _ := newTestStore(t, gates.Bounds{})
			runJob(t, s, testKey, localJob(), PromoteRequest{}, "before")
			sess, jobDir := mustResolve(t, s, testKey, localJob())
			lostRun := append(staged(t, jobDir), entryLine("lost")...)
			stage(t, jobDir, lostRun)
			lose(crashAfterCommit(t, s, root, sess))

			other, otherDir := mustResolve(t, s, testKey, localJob())
			want(t, other, true, gates.Resumed)
			if other.Base.Gen != 1 {
				t.Fatalf("the other job resolved on gen %d, want gen 1 (gen 2 was lost)", other.Base.Gen)
			}
			stage(t, otherDir, append(staged(t, otherDir), entryLine("other")...))
			if res := mustPromote(t, s, other, PromoteRequest{PiVersion: testPi}); !res.Promoted || res.Gen != 3 {
				t.Fatalf("the other job's promote = %+v; want promoted at gen 3", res)
			}

			retry := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi})
			if retry.Promoted || retry.Repeat || retry.Reason != gates.Superseded || retry.SupersededBy != 3 {
				t.Fatalf("the lost promotion's retry = %+v; want superseded by gen 3 (the key holds the other job's run on gen 1, nothing of the lost run)", retry)
			}
			if got := staged(t, jobDir); string(got) != string(lostRun) {
				t.Fatal("the lost run left its job dir")
			}
			got, data := checkDescribed(t, s, root, testKey)
			if !got.Resume || got.Gen() != 3 || markerOf(data, 1) != "other" {
				t.Fatalf("after the retry: %+v holding %q; want the other job's run at gen 3", got, markerOf(data, 1))
			}
		})
	}
}
