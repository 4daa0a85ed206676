package store

import (
	"errors"
	"testing"

	"sessdb/db"
	"sessdb/gates"
)

// conflicting is a backend whose every commit loses its compare.
type conflicting struct {
	Backend
	begins int
}

func (c *conflicting) Begin(key string, b Base) (KeyTxn, error) {
	c.begins++
	txn, err := c.Backend.Begin(key, b)
	if err != nil {
		return nil, err
	}
	return conflictTxn{txn}, nil
}

type conflictTxn struct{ KeyTxn }

func (conflictTxn) Commit(Staged, db.Sidecars, db.HistoryEntry) error { return ErrConflict }

// A commit that loses its compare (ErrConflict) makes Promote look again
// once, the second Begin reading the key (Backend.Begin); a second loss is
// the promote's error, so a key that changes under every try cannot hold a
// promote in a loop.
func TestPromoteLooksAgainOnceOnAConflict(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "a")
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	stage(t, jobDir, append(staged(t, jobDir), entryLine("b")...))
	c := &conflicting{Backend: s.backend}
	s.backend = c
	_, err := s.Promote(sess, PromoteRequest{PiVersion: localJob().PiVersion})
	if !errors.Is(err, ErrConflict) || c.begins != 2 {
		t.Fatalf("promote under conflicts: %v after %d Begins; want ErrConflict after 2", err, c.begins)
	}
}
