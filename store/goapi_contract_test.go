package store_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"sessdb/gates"
	"sessdb/store"
)

// doneNoErr is a Context of a caller's own whose Done is closed while its
// Err stays nil: against Go's contract.
type doneNoErr struct {
	context.Context
	done chan struct{}
}

func (c doneNoErr) Done() <-chan struct{} { return c.done }
func (doneNoErr) Err() error              { return nil }

// The walks take a context whose Done is closed while its Err is nil as
// cancelled, as one cancelled by the standard library: each ends as it
// ends then, and nothing panics. Before, InspectWith, Stats and ReapWith
// panicked in the walk's goroutine (context.WithCancel: "missing cancel
// error"), a crash no caller can recover, and Check in the caller.
func TestWalksTakeAContextThatBreaksTheContract(t *testing.T) {
	base := t.TempDir()
	s, err := store.New(filepath.Join(base, "sessions"), store.Options{Bounds: gates.Bounds{TTL: 14 * 24 * time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	key := store.Key("github", "acme/widget", "pi/issue-42")
	jobDir := filepath.Join(base, "job")
	sess, err := s.Resolve(key, store.Job{PiVersion: "0.58.3", Venue: "local"}, jobDir)
	if err != nil {
		t.Fatal(err)
	}
	if err := appendTurn(filepath.Join(jobDir, store.StagedDirName, store.TranscriptName), 1, "go on"); err != nil {
		t.Fatal(err)
	}
	if res, err := s.Promote(sess, store.PromoteRequest{PiVersion: "0.58.3"}); err != nil || !res.Promoted {
		t.Fatalf("promote: %+v, %v", res, err)
	}
	walks := map[string]func(context.Context) error{
		"check": func(ctx context.Context) error {
			_, err := s.Check(ctx, store.CheckOptions{}, func(store.Finding) error { return nil })
			return err
		},
		"inspect": func(ctx context.Context) error {
			return s.InspectWith(ctx, store.InspectOptions{Verify: true, History: 1}, func(store.KeyReport) error { return nil })
		},
		"stats": func(ctx context.Context) error {
			_, err := s.Stats(ctx, store.StatsOptions{})
			return err
		},
		"reap": func(ctx context.Context) error {
			_, err := s.ReapWith(ctx, store.ReapOptions{})
			return err
		},
	}
	for what, walk := range walks {
		cancelled, cancel := context.WithCancel(context.Background())
		cancel()
		want := walk(cancelled)
		odd := doneNoErr{context.Background(), make(chan struct{})}
		close(odd.done)
		var got error
		panicked := func() (p any) {
			defer func() { p = recover() }()
			got = walk(odd)
			return nil
		}()
		if panicked != nil {
			t.Errorf("%s with Done closed and a nil Err: panicked: %v", what, panicked)
			continue
		}
		if (got == nil) != (want == nil) || errors.Is(got, context.Canceled) != errors.Is(want, context.Canceled) {
			t.Errorf("%s with Done closed and a nil Err: %v; with a cancelled context: %v", what, got, want)
		}
	}
}
