package engage

import (
	"container/list"
	"sync"
)

// DefaultMaxSessions is the Tracker's session cap when none is given. A
// session costs about 150 bytes besides its id, so the cap bounds memory
// under a megabyte; it is far above the number of sessions one host runs at
// once.
const DefaultMaxSessions = 4096

// Tracker holds the engagement state of every live session of a
// long-running host, keyed by session id. It is safe for concurrent use. The
// zero value is ready to use with DefaultMaxSessions.
//
// Memory is bounded two ways: End drops a session, and when a new session
// would exceed the cap, the least recently used session is evicted. An
// evicted session that comes back starts over as a new session: its next
// request carries a Start reset, so if it was engaged and is now below the
// threshold it goes raw (one extra prefix switch); if it is still over the
// threshold it re-engages at once. Eviction can cost a cache miss, never a
// request sent in the wrong shape for its reading.
type Tracker struct {
	mu       sync.Mutex
	max      int
	sessions map[string]*list.Element
	lru      list.List // front: most recently used; values are *session
}

type session struct {
	id      string
	state   State
	pending Event // the reset the next request carries
}

// NewTracker returns a Tracker that holds at most maxSessions sessions
// (DefaultMaxSessions when maxSessions <= 0).
func NewTracker(maxSessions int) *Tracker {
	return &Tracker{max: maxSessions}
}

// Start records a session start (a new session, a resume, a fork): the
// session is raw and its next request carries a Start reset. A session the
// Tracker has never seen is started implicitly by its first request.
func (t *Tracker) Start(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.touch(id)
	s.state, s.pending = Raw, Start
}

// Compacted records that a compaction ran for the session: its next request
// carries a Compaction reset. The state itself is left alone until then,
// because crossing still wins on that request.
func (t *Tracker) Compacted(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.touch(id)
	if s.pending == None {
		s.pending = Compaction
	}
}

// Request steps the session's state for one outgoing request with the
// reading before it and the threshold of the session's model, consumes any
// pending reset, and returns the state the request goes out in. A model
// change is not a reset (docs/engage.md says why): the next request simply
// passes the new model's threshold.
func (t *Tracker) Request(id string, r Reading, threshold int64) State {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.touch(id)
	s.state = Step(s.state, r, threshold, s.pending)
	s.pending = None
	return s.state
}

// State returns the session's current state, and false for a session the
// Tracker does not hold. It does not count as a use for eviction.
func (t *Tracker) State(id string) (State, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if el, ok := t.sessions[id]; ok {
		return el.Value.(*session).state, true
	}
	return Raw, false
}

// End drops the session.
func (t *Tracker) End(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if el, ok := t.sessions[id]; ok {
		t.lru.Remove(el)
		delete(t.sessions, id)
	}
}

// Len returns the number of sessions held.
func (t *Tracker) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.sessions)
}

// touch returns the session, creating it (with a pending Start) and evicting
// the least recently used one if needed, and marks it most recently used.
func (t *Tracker) touch(id string) *session {
	if el, ok := t.sessions[id]; ok {
		t.lru.MoveToFront(el)
		return el.Value.(*session)
	}
	if t.sessions == nil {
		t.sessions = make(map[string]*list.Element)
	}
	limit := t.max
	if limit <= 0 {
		limit = DefaultMaxSessions
	}
	for len(t.sessions) >= limit {
		old := t.lru.Back()
		t.lru.Remove(old)
		delete(t.sessions, old.Value.(*session).id)
	}
	s := &session{id: id, pending: Start}
	t.sessions[id] = t.lru.PushFront(s)
	return s
}
