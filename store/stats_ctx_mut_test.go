package store_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"sessdb/store"
)

// Stats given a context of the caller's own whose Done is closed while
// its Err is nil is interrupted as with a cancelled one: the figures so
// far, Interrupted, and context.Canceled; not the "root cannot be read"
// answer (no figures) that an error not ctx's own gets.
func TestStatsOfAContextThatBreaksTheContractIsInterrupted(t *testing.T) {
	base := t.TempDir()
	s, err := store.New(filepath.Join(base, "sessions"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// A key dir, so that the walk has something to look at ctx before.
	if err := os.MkdirAll(filepath.Join(base, "sessions", store.Key("github", "acme/widget", "pi/issue-42")), 0o700); err != nil {
		t.Fatal(err)
	}
	odd := doneNoErr{context.Background(), make(chan struct{})}
	close(odd.done)
	st, err := s.Stats(odd, store.StatsOptions{})
	if !errors.Is(err, context.Canceled) || st == nil || !st.Interrupted {
		t.Fatalf("Stats = %v, %v; want the figures so far, Interrupted, context.Canceled", st != nil, err)
	}
}
