package engage

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
)

// Fixture 10's readings through a Tracker, as a host would feed them: the
// session starts, crosses at request 4, stays engaged through the flap
// requests 5-7, and a manual compaction before request 8 resets it.
func TestTrackerSession(t *testing.T) {
	th := Threshold(DefaultWindow, DefaultReserve)
	tr := NewTracker(0)
	tr.Start("s")
	want := []State{Raw, Raw, Raw, Engaged, Engaged, Engaged, Engaged, Raw, Raw}
	readings := []Reading{Known(18), Known(172502), Known(172412), Known(183732), Known(131734), Known(131776), Known(131900), {}, Known(9933)}
	for i, r := range readings {
		if i == 7 {
			tr.Compacted("s")
		}
		if got := tr.Request("s", r, th); got != want[i] {
			t.Errorf("request %d (%v): %v, want %v", i+1, r, got, want[i])
		}
	}
	if s, ok := tr.State("s"); !ok || s != Raw {
		t.Errorf("State = %v, %v", s, ok)
	}
}

func TestTrackerResets(t *testing.T) {
	const th = 100
	var tr Tracker // the zero value is ready
	if got := tr.Request("a", Known(500), th); got != Engaged {
		t.Fatalf("first request over the threshold: %v", got)
	}
	if got := tr.Request("a", Known(50), th); got != Engaged {
		t.Fatalf("below after crossing: %v, want sticky", got)
	}
	tr.Compacted("a")
	if s, _ := tr.State("a"); s != Engaged {
		t.Fatalf("Compacted changed the state before the next request: %v", s)
	}
	if got := tr.Request("a", Known(50), th); got != Raw {
		t.Fatalf("first request after a compaction, below: %v", got)
	}
	tr.Request("a", Known(500), th)
	tr.Compacted("a")
	if got := tr.Request("a", Known(500), th); got != Engaged {
		t.Fatalf("still above after a compaction: %v, want engaged at once", got)
	}
	tr.Start("a") // a resume
	if s, _ := tr.State("a"); s != Raw {
		t.Fatalf("Start left %v", s)
	}
	if got := tr.Request("a", Known(50), th); got != Raw {
		t.Fatalf("after Start: %v", got)
	}
	// The reset is consumed by one request only.
	tr.Request("a", Known(500), th)
	if got := tr.Request("a", Known(50), th); got != Engaged {
		t.Fatalf("a reset was applied twice: %v", got)
	}
}

func TestTrackerEndAndEviction(t *testing.T) {
	const th = 100
	tr := NewTracker(2)
	tr.Request("a", Known(500), th)
	tr.Request("b", Known(500), th)
	tr.End("b")
	if _, ok := tr.State("b"); ok || tr.Len() != 1 {
		t.Fatalf("End kept the session: len %d", tr.Len())
	}
	tr.Request("b", Known(500), th)
	tr.Request("a", Known(50), th) // a is now the most recently used
	tr.Request("c", Known(50), th) // evicts b, the least recently used
	if tr.Len() != 2 {
		t.Fatalf("len %d, want the cap 2", tr.Len())
	}
	if _, ok := tr.State("b"); ok {
		t.Fatal("b survived; the least recently used session should go")
	}
	if s, ok := tr.State("a"); !ok || s != Engaged {
		t.Fatalf("a = %v, %v; want kept and still engaged", s, ok)
	}
	// An evicted session comes back as a new one: its next request carries
	// a Start reset.
	if got := tr.Request("b", Known(50), th); got != Raw {
		t.Fatalf("evicted b came back %v, want raw (Start reset)", got)
	}
}

// The zero value and NewTracker(0) hold DefaultMaxSessions sessions, the
// cap docs/engage.md names (4096): issue 5's bounded memory for a host
// that never says how many.
func TestTrackerDefaultCap(t *testing.T) {
	if DefaultMaxSessions != 4096 {
		t.Errorf("DefaultMaxSessions = %d; docs/engage.md says 4096", DefaultMaxSessions)
	}
	var zero Tracker
	for _, tr := range []*Tracker{&zero, NewTracker(0), NewTracker(-1)} {
		for i := range DefaultMaxSessions + 1 {
			tr.Start(fmt.Sprint("s", i))
		}
		if tr.Len() != DefaultMaxSessions {
			t.Errorf("len %d after %d sessions, want the cap %d", tr.Len(), DefaultMaxSessions+1, DefaultMaxSessions)
		}
		if _, ok := tr.State("s0"); ok {
			t.Error("the least recently used session survived the cap")
		}
	}
}

// Concurrent sessions under -race: each goroutine owns a session and checks
// every state against Step. The cap leaves room for every owned session, so
// none is evicted under its owner's feet (TestTrackerEvictionUnderLoad
// covers that).
func TestTrackerConcurrent(t *testing.T) {
	const th, sessions, requests = 1000, 64, 200
	tr := NewTracker(2 * sessions)
	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	for g := 0; g < sessions; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			id := fmt.Sprintf("session-%d", g)
			tr.Start(id)
			want, ev := Raw, Start
			for i := 0; i < requests; i++ {
				if i%50 == 25 {
					tr.Compacted(id)
					ev = Compaction
				}
				r := Known(int64((g*7 + i*13) % 2000))
				if i%17 == 0 {
					r = Reading{}
				}
				want = Step(want, r, th, ev)
				ev = None
				if got := tr.Request(id, r, th); got != want {
					errs <- fmt.Errorf("%s request %d: %v, want %v", id, i, got, want)
					return
				}
				tr.State(id)
				tr.Len()
			}
			tr.End(id)
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := tr.Len(); n != 0 {
		t.Errorf("len %d after every session ended", n)
	}
}

// Many goroutines on more sessions than the cap: the Tracker never holds
// more than the cap, and every state it hands out is one of the two.
func TestTrackerEvictionUnderLoad(t *testing.T) {
	const th, limit = 1000, 8
	tr := NewTracker(limit)
	var wg sync.WaitGroup
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				id := fmt.Sprintf("s%d", (g*31+i)%40)
				switch i % 5 {
				case 0:
					tr.Start(id)
				case 1:
					tr.Compacted(id)
				case 4:
					tr.End(id)
				default:
					if s := tr.Request(id, Known(int64(i*97%2000)), th); s != Raw && s != Engaged {
						t.Errorf("state %v", s)
					}
				}
				if n := tr.Len(); n > limit {
					t.Errorf("len %d over the cap %d", n, limit)
				}
			}
		}(g)
	}
	wg.Wait()
}

// Random sequences of Start, Compacted, Request and End on a few sessions,
// against a model written from the docs alone: a map of (state, pending
// reset) with least-recently-used eviction, where a request engages over
// the threshold (strictly; readings one below, equal, one and two above,
// or unknown), else a pending reset disengages, else the state carries.
// Every answer, every held state and the session count must agree.
func TestTrackerAgainstModel(t *testing.T) {
	type model struct {
		st  State
		pen Event
	}
	for seed := range uint64(300) {
		rnd := rand.New(rand.NewPCG(seed, 7))
		limit := 1 + rnd.IntN(4)
		tr := NewTracker(limit)
		held := map[string]*model{}
		var lru []string // least recently used first
		touch := func(id string) *model {
			if i := slices.Index(lru, id); i >= 0 {
				lru = append(slices.Delete(lru, i, i+1), id)
				return held[id]
			}
			for len(held) >= limit {
				delete(held, lru[0])
				lru = lru[1:]
			}
			m := &model{pen: Start}
			held[id], lru = m, append(lru, id)
			return m
		}
		const th = 100
		for step := range 60 {
			id := string(rune('a' + rnd.IntN(6)))
			switch rnd.IntN(5) {
			case 0:
				tr.Start(id)
				m := touch(id)
				m.st, m.pen = Raw, Start
			case 1:
				tr.Compacted(id)
				if m := touch(id); m.pen == None {
					m.pen = Compaction
				}
			case 2, 3:
				r := Reading{}
				if rnd.IntN(4) > 0 {
					r = Known(th - 1 + int64(rnd.IntN(4)))
				}
				got := tr.Request(id, r, th)
				m := touch(id)
				switch {
				case r.Known && r.Tokens > th:
					m.st = Engaged
				case m.pen != None:
					m.st = Raw
				}
				m.pen = None
				if got != m.st {
					t.Fatalf("seed %d step %d: Request(%s, %v) = %v, want %v", seed, step, id, r, got, m.st)
				}
			case 4:
				tr.End(id)
				if i := slices.Index(lru, id); i >= 0 {
					lru = slices.Delete(lru, i, i+1)
					delete(held, id)
				}
			}
			if tr.Len() != len(held) {
				t.Fatalf("seed %d step %d: %d sessions held, want %d", seed, step, tr.Len(), len(held))
			}
			for id, m := range held {
				if s, ok := tr.State(id); !ok || s != m.st {
					t.Fatalf("seed %d step %d: State(%s) = %v, %v; want %v", seed, step, id, s, ok, m.st)
				}
			}
		}
	}
}
