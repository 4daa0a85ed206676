package fleet

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// A reaper process holding a key's lock is stopped (SIGSTOP: its lease's
// keep-alives stop, as in a worker frozen by the host) until its lease
// expires. The lock is then free (no stale-lock clock: the parent takes
// it), a job promotes the key meanwhile, and the reaper, let go on, does
// not remove it: its lock is lost, and its delete would lose its compare.
func TestLeaseExpiresUnderAStalledReaper(t *testing.T) {
	c := etcdtest.Start3(t)
	f := newFixture(t, c, func(c *Config) { c.LockTTL, c.LockWait = time.Second, 20*time.Second })
	key := store.Key("github", "lease", "x")
	f.now = time.Now().Add(-30 * 24 * time.Hour)
	f.run(key, "old")
	f.now = time.Time{}

	reaper := startChild(t, "reap-hold", envEndpoints+"="+strings.Join(c.Endpoints(), ","), envPrefix+"="+f.prefix, envDir+"="+f.dir)
	if l, ok := reaper.next(60 * time.Second); !ok || l != "holding" {
		t.Fatalf("the reaper did not take the lock: %q", l)
	}
	if err := reaper.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	unlock, _, err := f.b.meta.Lock(context.Background(), key)
	if err != nil {
		reaper.cmd.Process.Signal(syscall.SIGCONT)
		t.Fatalf("the lock of a stopped holder did not end with its lease: %v", err)
	}
	freed := time.Since(stopped)
	f.run(key, "new")
	unlock()
	reaper.cmd.Process.Signal(syscall.SIGCONT)
	fmt.Fprintln(reaper.stdin, "go")
	var got []string
	for l, ok := reaper.next(60 * time.Second); ok; l, ok = reaper.next(60 * time.Second) {
		got = append(got, l)
	}
	if err := reaper.cmd.Wait(); err != nil {
		t.Fatalf("the reaper: %v (%v)", err, got)
	}
	if len(got) != 1 || !strings.HasPrefix(got[0], "reaped 0 ") {
		t.Fatalf("the reaper said %q, want that it removed nothing", got)
	}
	f.holds(key, "new", 2)
	t.Logf("lease of 1s; the lock was free %v after its holder stopped; the reaper, let go on: %s", freed.Round(10*time.Millisecond), got[0])
}
