package fleet_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"sessdb/fleet"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// apiDoneNoErr is a Context of a caller's own whose Done is closed while
// its Err stays nil: against Go's contract.
type apiDoneNoErr struct {
	context.Context
	done chan struct{}
}

func (c apiDoneNoErr) Done() <-chan struct{} { return c.done }
func (apiDoneNoErr) Err() error              { return nil }

// The fleet's walks take a context whose Done is closed while its Err is
// nil as cancelled, as one the standard library cancelled: each ends as
// it ends then, and nothing panics. Before, each panicked in
// context.WithTimeout ("missing cancel error") or ran on as if never
// cancelled.
func TestFleetWalksTakeAContextThatBreaksTheContract(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	b, s := apiFleet(t, c)
	apiPromote(t, s, store.Key("github", "acme/widget", "1"), apiLine("one"))
	root := filepath.Join(t.TempDir(), "sessions")
	walks := map[string]func(context.Context) error{
		"claim": func(ctx context.Context) error {
			fresh, _ := apiFleet(t, c) // a Backend whose dir no one has claimed
			return fresh.Claim(ctx)
		},
		"reap": func(ctx context.Context) error {
			_, err := b.Reap(ctx, fleet.ReapOptions{TTL: time.Hour})
			return err
		},
		"check": func(ctx context.Context) error {
			_, err := b.Check(ctx, fleet.CheckOptions{}, func(store.Finding) error { return nil })
			return err
		},
		"dump": func(ctx context.Context) error {
			return b.Inspect(ctx, fleet.InspectOptions{Verify: true}, func(fleet.Report) error { return nil })
		},
		"stats": func(ctx context.Context) error {
			_, err := b.Stats(ctx, fleet.StatsOptions{Window: time.Hour})
			return err
		},
		"migrate --from etcd": func(ctx context.Context) error {
			_, err := fleet.FromEtcd(ctx, b, root, fleet.MigrateOptions{}, func(fleet.MigrateReport) error { return nil })
			return err
		},
		"migrate --to etcd": func(ctx context.Context) error {
			_, err := fleet.ToEtcd(ctx, t.TempDir(), b, fleet.MigrateOptions{}, func(fleet.MigrateReport) error { return nil })
			return err
		},
	}
	for what, walk := range walks {
		cancelled, cancel := context.WithCancel(context.Background())
		cancel()
		want := walk(cancelled)
		odd := apiDoneNoErr{context.Background(), make(chan struct{})}
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
