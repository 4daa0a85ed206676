package store

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"sessdb/db"
	"sessdb/gates"
)

// txidOf returns the transaction id of key's meta.db: one more per commit.
func txidOf(t *testing.T, root, key string) uint64 {
	t.Helper()
	m := chkMeta(t, root, key)
	return m.Pages[m.Active].Txid
}

// A promotion into an existing meta.db makes one commit: the pending entry
// is not cleared by a second one (two more flushes); the next writer's
// commit replaces it. A landed promotion's entry names a temp that is gone,
// so it is settled: dump does not report it, check finds nothing, the next
// promotion and every resolve go on as if it were not there.
func TestPromoteCommitsOnce(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "first")
	for i := range 3 {
		before := txidOf(t, root, testKey)
		_, res := runJob(t, s, testKey, localJob(), PromoteRequest{}, "again")
		if after := txidOf(t, root, testKey); after != before+1 {
			t.Fatalf("promotion %d: txid %d -> %d, want one commit", i, before, after)
		}
		sc := sidecarsOf(t, root, testKey)
		if sc.Pending == nil || sc.Pending.Gen != res.Gen {
			t.Fatalf("promotion %d: pending entry %+v, want the landed gen %d's", i, sc.Pending, res.Gen)
		}
		if inFlight(t, root, testKey, sc.Pending) {
			t.Fatalf("promotion %d: its temp %s is still there", i, sc.Pending.Tmp)
		}
		sess, _ := checkDescribed(t, s, root, testKey)
		want(t, sess, true, gates.Resumed)
	}
	var reports []KeyReport
	if err := s.Inspect(0, func(r KeyReport) error { reports = append(reports, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(reports) != 1 || reports[0].Pending != nil {
		t.Fatalf("dump reports a landed promotion as pending: %+v", reports[0].Pending)
	}
	var findings []Finding
	sum, err := s.Check(context.Background(), CheckOptions{}, func(f Finding) error { findings = append(findings, f); return nil })
	if err != nil || sum.Problems != 0 {
		t.Fatalf("check of a key after landed promotions: %d problems %+v, %v", sum.Problems, findings, err)
	}
	if settled, err := s.RollForward(testKey); err != nil || settled {
		t.Fatalf("RollForward of landed promotions: settled=%v, %v; want nothing to settle", settled, err)
	}
}

// A promotion whose temp is still at its name is in flight, whatever else:
// dump reports it and the next writer rolls it forward (the crash tests
// cover the outcomes); a temp name that could lead out of the key dir is
// never looked up.
func TestPendingInFlightOnlyWhileItsTempExists(t *testing.T) {
	kd := t.TempDir()
	d, err := os.Open(kd)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	tmp := tmpPrefix + "0123456789abcdef"
	cases := []struct {
		name string
		p    *db.Pending
		make bool
		want bool
	}{
		{"no entry", nil, false, false},
		{"temp present", &db.Pending{Tmp: tmp}, true, true},
		{"temp gone", &db.Pending{Tmp: tmp}, false, false},
		{"not a temp name", &db.Pending{Tmp: "current.jsonl"}, false, false},
		{"a path out of the dir", &db.Pending{Tmp: "../" + tmp}, false, false},
	}
	for _, c := range cases {
		os.Remove(filepath.Join(kd, tmp))
		if c.make {
			os.WriteFile(filepath.Join(kd, tmp), []byte("x"), 0o600)
		}
		if got := pendingInFlight(d, c.p); got != c.want {
			t.Errorf("%s: in flight = %v, want %v", c.name, got, c.want)
		}
	}
	// Planted beside the key dir, a "../" name would exist: still refused.
	os.WriteFile(filepath.Join(filepath.Dir(kd), tmp), []byte("x"), 0o600)
	defer os.Remove(filepath.Join(filepath.Dir(kd), tmp))
	if pendingInFlight(d, &db.Pending{Tmp: "../" + tmp}) {
		t.Error("a pending entry naming ../<temp> was looked up outside the key dir")
	}
	// Nor through a directory whose name is a temp's, nor at a name that
	// is there but is no temp's.
	if err := os.Mkdir(filepath.Join(kd, tmpPrefix+"d"), 0o700); err != nil {
		t.Fatal(err)
	}
	if pendingInFlight(d, &db.Pending{Tmp: tmpPrefix + "d/../../" + tmp}) {
		t.Error("a pending entry naming <temp>/../../<temp> was looked up outside the key dir")
	}
	if err := os.WriteFile(filepath.Join(kd, "current.jsonl"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if pendingInFlight(d, &db.Pending{Tmp: "current.jsonl"}) {
		t.Error("a pending entry naming current.jsonl, which is there, was taken for a temp in flight")
	}
}
