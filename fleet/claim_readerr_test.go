package fleet

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/fleet/shared"
	"sessdb/gates"
	"sessdb/internal/etcdtest"
	"sessdb/internal/faults"
	"sessdb/store"
)

// A mark whose read fails (EIO; ESTALE, the mark's handle gone stale,
// stood in for by the fault point) is an I/O error named by the mark's
// path and its errno, never ErrOtherFleet nor a bad mark (whose remedy,
// removing the mark, would be wrong here): a writer's claim, an audit (a
// check, a reap's dry run) and a promotion fail with it, nothing written;
// where the dir itself is stale too it is shared.ErrDirUnavailable, what
// Unreachable stands in for. Once the read answers again the same
// Backend claims the dir, its mark as it was.
func TestAMarkThatCannotBeReadIsAnIOErrorNotAnotherFleet(t *testing.T) {
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "mark", "read-fails")
	f.run(key, "one")
	mark := filepath.Join(f.dir, shared.MarkName)
	was, err := os.ReadFile(mark)
	if err != nil {
		t.Fatal(err)
	}
	defer faults.Set(nil)
	for _, c := range []struct {
		errno   syscall.Errno
		dirGone bool
	}{{unix.EIO, false}, {unix.ESTALE, false}, {unix.ESTALE, true}} {
		name := c.errno.Error()
		if c.dirGone {
			name += ", the dir stale too"
		}
		t.Run(name, func(t *testing.T) {
			g := f.otherFleet(f.c, f.prefix) // a worker of the fleet, not yet claimed
			faults.Set(func(p faults.Point) error {
				if p == faults.SharedMarkRead || c.dirGone && p == faults.SharedDirStat {
					return c.errno
				}
				return nil
			})
			named := func(what string, err error) {
				t.Helper()
				switch {
				case !errors.Is(err, c.errno) || errors.Is(err, ErrOtherFleet) || errors.Is(err, shared.ErrBadMark):
					t.Errorf("%s: %v; want the read's %v, not another fleet's dir nor a bad mark", what, err, c.errno)
				case c.dirGone != errors.Is(err, shared.ErrDirUnavailable) || c.dirGone != IsUnreachable(err):
					t.Errorf("%s: %v; want the dir unavailable: %v", what, err, c.dirGone)
				case !c.dirGone && !strings.Contains(err.Error(), mark):
					t.Errorf("%s: %v; want it to name the mark", what, err)
				}
			}
			named("claim", g.b.Claim(t.Context()))
			_, err := g.b.Check(t.Context(), CheckOptions{}, nil)
			named("check", err)
			_, err = g.b.Reap(t.Context(), ReapOptions{TTL: time.Hour, DryRun: true})
			named("reap --dry-run", err)
			sess, _ := f.job(key, "two")
			res, err := g.s.Promote(sess, store.PromoteRequest{})
			named("promote", err)
			if res.Promoted || res.Reason != gates.PromoteFailed {
				t.Errorf("promote: %+v; want promote-failed", res)
			}
			faults.Set(nil)
			if err := g.b.Claim(t.Context()); err != nil {
				t.Errorf("claim once the mark reads again: %v", err)
			}
			if now, err := os.ReadFile(mark); err != nil || string(now) != string(was) {
				t.Errorf("the mark is %q (%v); want it as it was, %q", now, err, was)
			}
			if p, err := g.s.Promote(sess, store.PromoteRequest{}); err != nil || !p.Promoted {
				t.Errorf("the job's promotion once the mark reads: %+v, %v", p, err)
			}
		})
	}
}
