package fleet

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"sessdb/internal/etcdtest"
	"sessdb/migrate"
	"sessdb/store"
)

// reasonCtx is a caller's ctx that ends with a reason of its own (an
// error of the caller's type), neither context.Canceled nor
// context.DeadlineExceeded: reason, or errCallersReason.
type reasonCtx struct {
	context.Context
	once   sync.Once
	done   chan struct{}
	reason error
}

var errCallersReason = errors.New("the caller's own reason")

func (c *reasonCtx) stop()                 { c.once.Do(func() { close(c.done) }) }
func (c *reasonCtx) Done() <-chan struct{} { return c.done }
func (c *reasonCtx) Err() error {
	select {
	case <-c.done:
		if c.reason != nil {
			return c.reason
		}
		return errCallersReason
	default:
		return nil
	}
}

// A migration stopped by a caller's ctx whose Err is its own reason, as
// the key's etcd read begins: the read is cut, the key unprinted, the run
// interrupted with the caller's reason. Before, the cut read was not seen
// as a stop (gRPC answers a context error it does not know as Unknown):
// the key was printed failed and the run, not interrupted, exited as
// failed. A reason that wraps context.DeadlineExceeded (the caller's own
// budget spent) was still taken for etcd's silence: gRPC answered it as
// code Unknown, its text "context deadline exceeded" etcd 3.4's timeout,
// and the key was printed failed "etcd unavailable", not interrupted.
func TestAMigrationStoppedWithTheCallersOwnReasonIsInterrupted(t *testing.T) {
	c := etcdtest.Start1(t)
	for _, reason := range []error{errCallersReason, fmt.Errorf("the caller's budget spent: %w", context.DeadlineExceeded)} {
		for _, to := range []bool{true, false} {
			f := newFixture(t, c)
			h := newHostBuilder(t, t.TempDir())
			key := store.Key("github", "migrate-stop-reason", map[bool]string{true: "to", false: "from"}[to]+reason.Error())
			h.mustPromote(key, migJob, "m1", store.PromoteRequest{})
			if !to {
				if got, _ := runMigration(t, true, h.root, f.b, migOpts()); got[key].Action != migrate.Migrated {
					t.Fatalf("the first move: %+v", got[key])
				}
				h = newHostBuilder(t, t.TempDir())
			}
			ctx := &reasonCtx{Context: context.Background(), done: make(chan struct{}), reason: reason}
			f.b.hook = func(p, k string) error {
				if p == hookMigrateRead && k == key {
					ctx.stop()
				}
				return nil
			}
			var got []MigrateReport
			visit := func(r MigrateReport) error { got = append(got, r); return nil }
			var sum MigrateSummary
			var err error
			if to {
				sum, err = ToEtcd(ctx, h.root, f.b, migOpts(), visit)
			} else {
				sum, err = FromEtcd(ctx, f.b, h.root, migOpts(), visit)
			}
			f.b.hook = nil
			if !errors.Is(err, reason) || !sum.Interrupted || len(got) != 0 {
				t.Errorf("to etcd %v: stopped with the caller's own reason (%v) at the key's read: %+v, %v, printed %+v; want the reason, interrupted, nothing printed", to, reason, sum, err, got)
			}
		}
	}
}
