package migrate

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/db"
	"sessdb/internal/durable/durabletest"
	"sessdb/internal/fsat"
	"sessdb/internal/testfs"
)

// The sweep of a killed run's meta.db temps removes one with its flock
// held, in both directions, as store's removals do
// (TestATempTakenForDebrisIsRemovedWithItsFlockHeld): a creator stalled
// between the temp's create and its flock then finds its name gone once
// it has the flock, and makes its temp again (db.TakeTemp).
func TestTheSweepRemovesAMetaDBTempWithItsFlockHeld(t *testing.T) {
	root, keys := newCorpus(t)
	key := keyNamed(keys, "plain")
	name := db.TempPrefix + "00000000000000f2"
	p := filepath.Join(root, key, name)
	for _, toLegacy := range []bool{false, true} {
		must(t, os.WriteFile(p, nil, 0o600))
		old := time.Now().Add(-2 * tempGrace)
		must(t, os.Chtimes(p, old, old))
		seen := &durabletest.FlockSeen{}
		opts := testOpts()
		opts.disk = durabletest.FlockAtRemoval{Name: name, Seen: seen}
		got, _ := migrate(t, root, toLegacy, opts)
		if r := got[key]; !slices.Contains(r.Removed, name) || !seen.Asked {
			t.Fatalf("%s: removed %v (through the disk: %v); want the temp among them", direction(toLegacy), r.Removed, seen.Asked)
		}
		if seen.Free {
			t.Errorf("%s: the sweep removed the temp with its flock free for a creator to take", direction(toLegacy))
		}
	}
}

// The sweep lets go of each temp it took, removed (a run, either way) or
// only listed (a dry run), though a child forked while it held the temp
// keeps a copy of the descriptor until it execs: a creator stalled
// between the temp's create and its flock, which opened it before, gets
// its flock at once instead of waiting on a sweep long over. The copy is
// made by hand inside the take, where a fork's would be.
func TestTheSweepLetsGoOfATakenMetaDBTempThoughACopyOfItsDescriptorLives(t *testing.T) {
	root, keys := newCorpus(t)
	key := keyNamed(keys, "plain")
	name := db.TempPrefix + "00000000000000f3"
	p := filepath.Join(root, key, name)
	for _, c := range []struct {
		toLegacy, dryRun bool
	}{{false, true}, {false, false}, {true, true}, {true, false}} {
		what := fmt.Sprintf("%s, dry run %v", direction(c.toLegacy), c.dryRun)
		must(t, os.WriteFile(p, nil, 0o600))
		old := time.Now().Add(-2 * tempGrace)
		must(t, os.Chtimes(p, old, old))
		creator, err := os.Open(p)
		must(t, err)
		copied := false
		fsat.TestHookFlockedNowOpened = func(n string) {
			if n != name || copied {
				return
			}
			copied = true
			fd, ok, err := testfs.DupDescriptorOf(p)
			if !ok {
				t.Skip("no /proc/self/fd to find the sweep's descriptor in")
			}
			must(t, err)
			t.Cleanup(func() { unix.Close(fd) })
		}
		t.Cleanup(func() { fsat.TestHookFlockedNowOpened = nil })
		opts := testOpts()
		opts.DryRun = c.dryRun
		got, _ := migrate(t, root, c.toLegacy, opts)
		fsat.TestHookFlockedNowOpened = nil
		if r := got[key]; !slices.Contains(r.Removed, name) || !copied {
			t.Fatalf("%s: removed %v (the temp taken: %v); want the temp among them", what, r.Removed, copied)
		}
		if err := unix.Flock(int(creator.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			t.Errorf("%s: a stalled creator's flock of the temp once the sweep took it: %v; want it had", what, err)
		}
		creator.Close()
		os.Remove(p)
	}
}
