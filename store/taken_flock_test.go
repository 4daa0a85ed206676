package store

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/fsat"
	"sessdb/internal/testfs"
)

// A meta.db temp that reap's sweep (or its dry run) or check --repair
// takes for debris is let go of once it is removed (or, in a dry run,
// left), though a child forked while it was held keeps a copy of the
// descriptor until it execs: a creator stalled between its create and its
// flock (db.TakeTemp), which opened the temp before it was taken, gets
// its flock at once, and goes on to make its temp again, instead of
// waiting on a look long over. The copy is made by hand inside the take,
// where a fork's would be.
func TestATakenMetaTempIsLetGoOfThoughACopyOfItsDescriptorLives(t *testing.T) {
	for _, c := range []struct {
		op      string
		removed bool
		run     func(s *Store, kd *os.File, clock *testClock) error
	}{
		{"reap's sweep", true, func(s *Store, kd *os.File, clock *testClock) error {
			_, err := s.sweepStaleTemps(kd, testKey, clock.now.Add(-StaleTempAge), false)
			return err
		}},
		{"reap --dry-run's sweep", false, func(s *Store, kd *os.File, clock *testClock) error {
			_, err := s.sweepStaleTemps(kd, testKey, clock.now.Add(-StaleTempAge), true)
			return err
		}},
		{"check --repair's removal", true, func(s *Store, kd *os.File, _ *testClock) error {
			_, err := s.removeTemps(kd, testKey)
			return err
		}},
	} {
		s, root, clock := newTestStore(t, gates.Bounds{})
		runJob(t, s, testKey, localJob(), PromoteRequest{}, "one")
		name := db.TempPrefix + "debris"
		path := filepath.Join(root, testKey, name)
		must(t, os.WriteFile(path, []byte("debris"), 0o600))
		old := clock.now.Add(-2 * StaleTempAge)
		must(t, os.Chtimes(path, old, old))
		creator, err := os.Open(path)
		must(t, err)
		defer creator.Close()
		copied := false
		fsat.TestHookFlockedNowOpened = func(n string) {
			if n != name || copied {
				return
			}
			copied = true
			fd, ok, err := testfs.DupDescriptorOf(path)
			if !ok {
				t.Skip("no /proc/self/fd to find the take's descriptor in")
			}
			must(t, err)
			t.Cleanup(func() { unix.Close(fd) })
		}
		t.Cleanup(func() { fsat.TestHookFlockedNowOpened = nil })
		err = c.run(s, openDirT(t, filepath.Join(root, testKey)), clock)
		fsat.TestHookFlockedNowOpened = nil
		if err != nil || !copied {
			t.Fatalf("%s: %v (the temp taken: %v)", c.op, err, copied)
		}
		if _, err := os.Lstat(path); fsat.IsNotExist(err) != c.removed {
			t.Fatalf("%s: the temp's lstat after: %v; want it removed %v", c.op, err, c.removed)
		}
		if err := unix.Flock(int(creator.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			t.Errorf("%s: a stalled creator's flock of the temp once it was taken: %v; want it had", c.op, err)
		}
	}
}
