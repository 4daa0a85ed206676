package fleet

import (
	"context"
	"errors"
	"testing"
	"time"

	"sessdb/fleet/etcdmeta"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// A deadline of the caller's that passes in the middle of check's walk,
// while a key's record is read again, ends the walk with ctx's error,
// not with etcdmeta.ErrUnavailable: the read was cut short by the
// caller, not left unanswered by etcd. Before, check returned "get
// <key>: etcd unavailable: context deadline exceeded".
func TestCheckEndedByTheCallersDeadlineMidWalk(t *testing.T) {
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "deadline", "mid-walk")
	f.run(key, "a")
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	f.b.hook = func(p, k string) error {
		if p == hookCheckEntry && k == key {
			<-ctx.Done() // the deadline passes before the key's record is read again
		}
		return nil
	}
	_, err := f.b.Check(ctx, CheckOptions{}, func(store.Finding) error { return nil })
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, etcdmeta.ErrUnavailable) {
		t.Fatalf("check = %v; want the caller's deadline, not etcd unavailable", err)
	}
}
