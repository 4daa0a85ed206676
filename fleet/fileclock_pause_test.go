package fleet

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// A reaper a year ahead of the file server is paused (a VM suspended, a
// SIGSTOP) for longer than the in-flight window while it reads the
// server's clock, after the server stamped the read and before it came
// back. Meanwhile a promotion writes its temp. The server's clock is still
// found a year behind, so the temp, just written by that clock, is kept
// (before: this host's clock was read before the server's, the pause was
// taken off the year, the files were judged by a clock the pause ahead of
// the server's, and the temp was swept before its commit).
func TestAReaperPausedWhileReadingTheFileClockKeepsAPromotionInFlight(t *testing.T) {
	etcdtest.Beside(t)
	const year, pause = 365 * 24 * time.Hour, inFlightAge + time.Hour
	f := newFixture(t, etcdtest.Start1(t))
	key := store.Key("github", "file clock", "paused")
	f.now = time.Now().Add(-year)
	f.run(key, "a")
	var shift time.Duration // how long the reaper has been paused
	clock := func() time.Time { return time.Now().Add(shift) }
	temp := filepath.Join(f.dir, key, ".tmp-0123456789abcdef")
	f.b.localNow = clock
	f.b.serverNow = func(string) (time.Time, error) {
		if shift == 0 {
			// The reaper is paused now; the world goes on, and a
			// promotion writes its temp by the server's clock.
			shift = pause
			at := clock().Add(-year)
			if err := os.WriteFile(temp, []byte("in flight"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(temp, at, at); err != nil {
				t.Fatal(err)
			}
		}
		return clock().Add(-year), nil
	}
	res, err := f.b.Reap(t.Context(), ReapOptions{Now: clock})
	if err != nil || len(res.Swept) != 0 || len(res.Removed) != 0 {
		t.Fatalf("reap = %+v, %v; want the temp in flight kept", res, err)
	}
	if _, err := os.Lstat(temp); err != nil {
		t.Fatalf("the temp in flight: %v", err)
	}
	f.holds(key, "a", 1)
}
