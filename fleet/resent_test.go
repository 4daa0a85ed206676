package fleet

import (
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/grpc/codes"

	"sessdb/gates"
	"sessdb/internal/etcdtest"
	"sessdb/store"
	"sessdb/store/transcript"
)

// resentTxn is the gRPC method of every guarded write.
const resentTxn = "/etcdserverpb.KV/Txn"

// A commit that landed, and whose answer came back as a context error
// (DeadlineExceeded or Canceled, from a hop between worker and member)
// while the commit's own context lived, is sent again by etcd's client
// itself (its retry interceptor), a Txn too: the commit sees only the
// second try's answer, a lost compare against its own record. That is
// its promotion: the job is promoted, and the file the record names
// stays. Before, the commit took the conflict for another's, removed its
// file (the key's record then named a file gone for good: every resolve
// transcript-replaced) and reported the job superseded. In process: the
// lost answer is LoseNextAs's, an interceptor fault.
func TestACommitTheClientSentAgainKeepsItsFile(t *testing.T) {
	etcdtest.Beside(t)
	for _, code := range []codes.Code{codes.DeadlineExceeded, codes.Canceled} {
		t.Run(code.String(), func(t *testing.T) {
			c := etcdtest.Start(t, etcdtest.Options{Members: 1, InProcess: true})
			f := newFixture(t, c)
			key := store.Key("github", "resent", code.String())
			f.run(key, "base")
			sess, _ := f.job(key, "resent")
			t.Cleanup(func() { c.LoseNextAs(resentTxn, 0, 0, code) })
			f.b.hook = func(p, k string) error {
				if p == hookCommit && k == key {
					c.LoseNextAs(resentTxn, 0, 1, code)
				}
				return nil
			}
			res, err := f.promote(sess)
			f.b.hook = nil
			file := f.recordFile(key)
			if _, serr := os.Lstat(filepath.Join(f.dir, file)); serr != nil {
				t.Fatalf("promote: %+v, %v; the record names %s: %v", res, err, file, serr)
			}
			if err != nil || !res.Promoted || res.Gen != 2 || res.Repeat {
				t.Fatalf("promote: %+v, %v; want promoted at gen 2 by this call", res, err)
			}
			f.holds(key, "resent", 2)
		})
	}
}

// A refusal's history entry that landed, its answer a context error
// etcd's client then sent again itself, finds its own entry in the slot
// it claimed: the refusal is recorded once, and the job told what it
// was refused for, not promote-failed.
func TestARefusalTheClientSentAgainIsRecordedOnce(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start(t, etcdtest.Options{Members: 1, InProcess: true})
	f := newFixture(t, c)
	key := store.Key("github", "resent", "refusal")
	f.run(key, "base")
	sess, _ := f.job(key, "unanswered")
	t.Cleanup(func() { c.LoseNextAs(resentTxn, 0, 0, codes.DeadlineExceeded) })
	f.b.hook = func(p, k string) error {
		if p == hookRefuse && k == key {
			// An append reads the key's newest entries first (a Txn
			// too); its write is the second.
			c.LoseNextAs(resentTxn, 1, 1, codes.DeadlineExceeded)
		}
		return nil
	}
	res, err := f.s.Promote(sess, store.PromoteRequest{PiVersion: testJob.PiVersion, Require: transcript.Answered})
	f.b.hook = nil
	if err != nil || res.Reason != gates.RunIncomplete {
		t.Fatalf("promote: %+v, %v; want run-incomplete", res, err)
	}
	st, err := f.b.meta.Get(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range st.History {
		if e.Ticket == sess.Ticket && e.Outcome == string(gates.RunIncomplete) {
			n++
		}
	}
	if n != 1 {
		t.Errorf("the refusal is recorded %d times, want once (history %+v)", n, st.History)
	}
}
