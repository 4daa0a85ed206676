package etcdmeta

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"sessdb/internal/etcdtest"
)

// promote is a worker's promotion as the store will run it: put the next
// generation onto base; a write whose outcome is unknown (ErrUnavailable)
// is retried on the same base until it commits or conflicts, and a
// conflict whose record names this promotion's own file is this promotion,
// committed by an earlier try. It returns the new revision and how many
// tries were unsure.
func promote(s *Store, key string, base Rev, gen uint64) (Rev, int, error) {
	rec, e := record(key, gen), entry(gen, randHex(16))
	unsure := 0
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		rev, err := s.Put(context.Background(), key, base, rec, e)
		var ce *ConflictError
		switch {
		case err == nil:
			return rev, unsure, nil
		case errors.As(err, &ce):
			if tr := ce.Current.Record.Transcript; tr != nil && tr.File == rec.Transcript.File {
				return ce.Current.Rev, unsure, nil
			}
			return 0, unsure, fmt.Errorf("gen %d: conflict with a record that is not this promotion's: %w", gen, err)
		case errors.Is(err, ErrUnavailable):
			unsure++
			time.Sleep(50 * time.Millisecond)
		default:
			return 0, unsure, fmt.Errorf("gen %d: %w", gen, err)
		}
	}
	return 0, unsure, fmt.Errorf("gen %d: etcd unavailable for two minutes", gen)
}

// checkOnce proves every generation of key committed exactly once: the
// history is gens 1..n in order, one entry each, with distinct tickets.
func checkOnce(t *testing.T, s *Store, key string, n uint64) {
	t.Helper()
	st, err := s.Get(ctx(t), key)
	if err != nil {
		t.Fatal(err)
	}
	if st.Record.Transcript == nil || st.Record.Transcript.Gen != n || uint64(len(st.History)) != n {
		t.Fatalf("key %s: record gen %v, %d history entries; want gen %d and %d entries", key, st.Record.Transcript, len(st.History), n, n)
	}
	tickets := map[string]bool{}
	for i, e := range st.History {
		if e.Gen != uint64(i+1) || e.Seq != uint64(i+1) || tickets[e.Ticket] {
			t.Fatalf("key %s: history[%d] = gen %d seq %d ticket %s: a promotion committed twice or not at all", key, i, e.Gen, e.Seq, e.Ticket)
		}
		tickets[e.Ticket] = true
	}
}

// The leader is killed while two workers promote, each on its own key; it
// comes back later. Every promotion commits exactly once.
func TestLeaderKilledDuringPromotions(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start3(t)
	s := open(t, c, func(c *Config) { c.RequestTimeout = 2 * time.Second })
	const gens = 12
	keys := []string{newKey(), newKey()}
	var wg sync.WaitGroup
	unsure := make([]int, len(keys))
	half := make(chan struct{}, 2*len(keys))
	for i, key := range keys {
		wg.Go(func() {
			defer func() { half <- struct{}{} }() // also when it failed early
			var rev Rev
			for gen := uint64(1); gen <= gens; gen++ {
				var u int
				var err error
				rev, u, err = promote(s, key, rev, gen)
				unsure[i] += u
				if err != nil {
					t.Error(err)
					return
				}
				if gen == gens/2 {
					half <- struct{}{}
				}
			}
		})
	}
	<-half
	killed := c.KillLeader()
	time.Sleep(200 * time.Millisecond) // promotions run into the election
	c.Restart(killed)
	wg.Wait()
	if t.Failed() {
		return
	}
	for _, key := range keys {
		checkOnce(t, s, key, gens)
	}
	t.Logf("unsure writes retried: %v", unsure)
}

// A put whose leader dies under it either commits or fails; retried on the
// same base after the cluster is back, it conflicts with itself if it had
// committed, and commits otherwise. Nothing commits twice.
func TestPutRetriedAfterLeaderKill(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start3(t)
	s := open(t, c, func(c *Config) { c.RequestTimeout = time.Second })
	key := newKey()
	base := mustPut(t, s, key, 0, 1)
	rec, e := record(key, 2), entry(2, randHex(16))
	killed := c.KillLeader()
	_, first := s.Put(context.Background(), key, base, rec, e)
	c.Restart(killed)
	// The retry itself may meet the election still going on: it is
	// retried as a worker would, until etcd answers.
	var rev Rev
	var err error
	for range 60 {
		if rev, err = s.Put(ctx(t), key, base, rec, e); !errors.Is(err, ErrUnavailable) {
			break
		}
	}
	var ce *ConflictError
	switch {
	case first == nil:
		if !errors.As(err, &ce) || !reflect.DeepEqual(ce.Current.Record, rec) {
			t.Fatalf("the first put committed; the retry = %v, want a conflict carrying the same record", err)
		}
	case errors.Is(first, ErrUnavailable):
		if err != nil && !(errors.As(err, &ce) && reflect.DeepEqual(ce.Current.Record, rec)) {
			t.Fatalf("retry after an unsure put = %v", err)
		}
	default:
		t.Fatalf("put during the election = %v, want success or ErrUnavailable", first)
	}
	t.Logf("put during the election: %v; retry: rev %d, %v", first, rev, err)
	checkOnce(t, s, key, 2)
}

// With one member of three stopped, the two left are a quorum: reads and
// guarded writes go on, whichever member it was.
func TestTwoOfThreeServe(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start3(t)
	s := open(t, c)
	key := newKey()
	rev := mustPut(t, s, key, 0, 1)
	leader := c.Leader()
	follower := (leader + 1) % 3
	c.Stop(follower)
	rev = mustPut(t, s, key, rev, 2)
	if st, err := s.Get(ctx(t), key); err != nil || st.Rev != rev {
		t.Fatalf("Get with a follower stopped = %+v, %v", st, err)
	}
	c.Restart(follower)
	c.Stop(c.Leader())
	rev = mustPut(t, s, key, rev, 3)
	if st, err := s.Get(ctx(t), key); err != nil || st.Rev != rev {
		t.Fatalf("Get with the leader stopped = %+v, %v", st, err)
	}
	checkOnce(t, s, key, 3)
}

// Killing every member at once and starting them from their data dirs
// loses no acknowledged write.
func TestRecordsSurviveAClusterRestart(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start3(t)
	s := open(t, c)
	want := map[string]State{}
	for range 5 {
		key := newKey()
		mustPut(t, s, key, mustPut(t, s, key, 0, 1), 2)
		st, err := s.Get(ctx(t), key)
		if err != nil {
			t.Fatal(err)
		}
		want[key] = st
	}
	c.RestartAll()
	for key, w := range want {
		st, err := s.Get(ctx(t), key)
		if err != nil {
			t.Fatal(err)
		}
		st.Read, w.Read = 0, 0
		if !reflect.DeepEqual(st, w) {
			t.Fatalf("key %s after restart:\n got %+v\nwant %+v", key, st, w)
		}
	}
}

// With no member answering, every operation says ErrUnavailable within
// the request timeout, and nothing hangs.
func TestUnreachableIsUnavailable(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	key := newKey()
	rev := mustPut(t, open(t, c), key, 0, 1)
	s := open(t, c, func(c *Config) { c.RequestTimeout = 500 * time.Millisecond; c.LockWait = 500 * time.Millisecond })
	c.Stop(0)
	if _, err := s.Get(ctx(t), key); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Get = %v, want ErrUnavailable", err)
	}
	if _, err := s.Put(ctx(t), key, rev, record(key, 2), entry(2, randHex(16))); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Put = %v, want ErrUnavailable", err)
	}
	if _, _, err := s.Lock(ctx(t), key); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Lock = %v, want ErrUnavailable", err)
	}
	if err := s.List(ctx(t), func(Item) error { return nil }); !errors.Is(err, ErrUnavailable) {
		t.Errorf("List = %v, want ErrUnavailable", err)
	}
	// The caller's own cancellation is not the store's unavailability.
	cctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Get(cctx, key); !errors.Is(err, context.Canceled) || errors.Is(err, ErrUnavailable) {
		t.Errorf("Get with a cancelled context = %v, want context.Canceled only", err)
	}
}

// A request that the caller's own deadline ended, etcd up and answering,
// is ErrUnavailable as well as context.DeadlineExceeded, as ErrUnavailable's
// doc says: etcd's client ends both the request timeout and the caller's
// deadline with the same error. (A cancel is context.Canceled alone; the
// fleet's walks return a deadline of their caller's as ctx's error.)
func TestACallersDeadlineIsUnavailableToo(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	s := open(t, c)
	key := newKey()
	mustPut(t, s, key, 0, 1)
	past, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	if _, err := s.Get(past, key); !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrUnavailable) {
		t.Errorf("Get past the caller's deadline = %v, want ErrUnavailable and context.DeadlineExceeded", err)
	}
	if err := s.List(past, func(Item) error { return nil }); !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrUnavailable) {
		t.Errorf("List past the caller's deadline = %v, want ErrUnavailable and context.DeadlineExceeded", err)
	}
}
