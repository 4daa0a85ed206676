//go:build linux

package fleet

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// dropDAC locks the calling goroutine to its thread for good (the thread
// ends with the goroutine) and takes from that thread alone the
// capabilities that read, write and search past a file's mode
// (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH). The tests run as root, where
// no mode keeps a directory from being read or written; from there on the
// thread is held to the modes, as a reaper that is not root is. Other
// threads keep theirs: the runtime starts no thread from a locked one.
func dropDAC() error {
	runtime.LockOSThread()
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return err
	}
	for _, c := range []uint{unix.CAP_DAC_OVERRIDE, unix.CAP_DAC_READ_SEARCH} {
		data[c/32].Effective &^= 1 << (c % 32)
	}
	return unix.Capset(&hdr, &data[0])
}

// A reap that cannot read a key's directory (mode 000, the reaper held
// to the modes) of a key it kept counts that key once: in Skipped, with
// the read's error, and not in Kept (ReapResult.Skipped: such a key is
// not counted in Kept; sessdb reap's summary says failed, not kept). A
// key whose dir reads is kept as ever. Before (mutant p08 of the sweep
// `survivors`, `kept && !slices.Contains(res.Removed, key)` without its
// `!`), no test held it: no test made a key dir unreadable, the tests
// running as root.
func TestReapCountsAKeptKeyWhoseDirCannotBeReadOnceAsSkipped(t *testing.T) {
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	readable, unreadable := store.Key("github", "reap-unreadable", "1"), store.Key("github", "reap-unreadable", "2")
	f.run(readable, "one")
	f.run(unreadable, "two")
	kd := filepath.Join(f.dir, unreadable)
	if err := os.Chmod(kd, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(kd, 0o700) })
	res, err := reapHeldToModes(t, f, kd)
	if err != nil || len(res.Removed) != 0 || len(res.Skipped) != 1 || !errors.Is(res.Skipped[unreadable], fs.ErrPermission) || res.Kept != 1 {
		t.Errorf("reap with %s's dir unreadable = %+v, %v; want %s kept (1), %s skipped with its dir's error and not kept", unreadable, res, err, readable, unreadable)
	}
}

// A reap's skip of a key whose directory it cannot read names that
// directory as every other message of a fleet's names a key's: under the
// transcripts dir, the dir itself left out (as check's notes, and sessdb
// reap's actions, name it). Before, the error carried the dir's whole
// path: "open /tmp/…/003/<key>: permission denied".
func TestAReapsSkipOfAnUnreadableKeyDirNamesItUnderTheDir(t *testing.T) {
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "reap-unreadable", "named")
	f.run(key, "one")
	kd := filepath.Join(f.dir, key)
	if err := os.Chmod(kd, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(kd, 0o700) })
	res, err := reapHeldToModes(t, f, kd)
	why := res.Skipped[key]
	if err != nil || why == nil || !errors.Is(why, fs.ErrPermission) {
		t.Fatalf("reap with %s's dir unreadable = %+v, %v; want it skipped with its dir's error", key, res, err)
	}
	if msg := why.Error(); strings.Contains(msg, f.dir) || msg != "open "+key+": permission denied" {
		t.Errorf("the skip's error = %q; want %q, the dir %s left out", msg, "open "+key+": permission denied", f.dir)
	}
}

// reapHeldToModes reaps f's fleet (TTL 14 days) from a thread held to the
// modes (dropDAC), once kd, a key dir of mode 000, is seen not to open
// there; it skips the test where no thread can be held so.
func reapHeldToModes(t *testing.T, f *fixture, kd string) (ReapResult, error) {
	t.Helper()
	type reaped struct {
		res  ReapResult
		err  error
		drop error
	}
	done := make(chan reaped)
	go func() {
		// Never unlocked: the thread, held to the modes, ends with this
		// goroutine.
		if err := dropDAC(); err != nil {
			done <- reaped{drop: err}
			return
		}
		if d, err := os.Open(kd); err == nil {
			d.Close()
			done <- reaped{drop: errors.New("a dir of mode 000 still opens")}
			return
		}
		res, err := f.b.Reap(t.Context(), ReapOptions{TTL: 14 * 24 * time.Hour})
		done <- reaped{res: res, err: err}
	}()
	r := <-done
	if r.drop != nil {
		t.Skipf("no thread held to the modes here: %v", r.drop)
	}
	t.Logf("reap: %+v, %v", r.res, r.err)
	return r.res, r.err
}

// check --repair says of an orphan it came to remove what became of it:
// one that another reaper or repair swept since the listing no longer
// remains, and is not this run's repair ("gone since it was found": it
// said "removed", repaired, until TestARepairSaysAnOrphanAnotherRemovedFirstIsGoneSince),
// and one whose removal failed (its key's directory not writable to the
// repair, held to the modes) remains and says why. Before (mutant r16 of the sweep `survivors`, `err != nil
// && !gone(err)` without its `!`), no test held either: the mutant reports
// the failed removal "removed", the file still there, and the swept one
// not removed, remaining.
func TestCheckRepairSaysWhatBecameOfEachOrphan(t *testing.T) {
	etcdtest.Beside(t)
	for _, tc := range []struct {
		name string
		at   func(t *testing.T, orphan string) error // at hookRepairLocked, on the repair's goroutine
		left bool
		want string
	}{
		{"swept by another", func(t *testing.T, orphan string) error { return os.Remove(orphan) }, false, "gone since it was found"},
		{"not removable", func(t *testing.T, orphan string) error {
			if err := os.Chmod(filepath.Dir(orphan), 0o500); err != nil {
				return err
			}
			return dropDAC() // the walk's worker: it ends with the walk
		}, true, "not removed: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := etcdtest.Start1(t)
			f := newFixture(t, c)
			key := store.Key("github", "repair-remove", "orphan")
			f.runExpired(key, "old") // promoted 30 days ago: its old files are past the grace period
			orphan := f.oldOrphan(key)
			t.Cleanup(func() { os.Chmod(filepath.Dir(orphan), 0o700) })
			var atErr error
			reached := false
			f.b.hook = func(point, k string) error {
				if point == hookRepairLocked && k == key && !reached {
					reached = true
					atErr = tc.at(t, orphan)
				}
				return nil
			}
			found := f.repairAll(f.b)
			switch {
			case !reached:
				t.Fatal("the repair never reached its hook")
			case atErr != nil && tc.left:
				t.Skipf("no thread held to the modes here: %v", atErr)
			case atErr != nil:
				t.Fatal(atErr)
			}
			if len(found) != 1 || found[0].Kind != KindOrphan || !strings.HasPrefix(found[0].Repair, tc.want) || found[0].Repaired || found[0].Remains != tc.left {
				t.Errorf("check --repair: %+v; want the orphan alone, Repair %q..., remaining %v", found, tc.want, tc.left)
			}
			if _, err := os.Stat(orphan); (err == nil) != tc.left {
				t.Errorf("the orphan: %v; want it there: %v", err, tc.left)
			}
		})
	}
}

// A key another removed under the reap (ReapResult.Gone) whose key dir
// the reap then cannot read is the reap's failure, as a kept key's is:
// in Skipped with the read's error, and no longer in Gone, so that it is
// counted once.
func TestAReapCountsAKeyGoneWhoseDirCannotBeReadOnceAsSkipped(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	first, gone := store.Key("github", "reap-gone-unreadable", "1"), store.Key("github", "reap-gone-unreadable", "2")
	if gone < first {
		first, gone = gone, first
	}
	f.runExpired(first, "old")
	f.runExpired(gone, "old")
	kd := filepath.Join(f.dir, gone)
	if err := os.Chmod(kd, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(kd, 0o700) })
	cli := c.Client(t)
	f.b.hook = func(p, k string) error {
		if p == hookReapDelete && k == first {
			_, err := cli.Delete(t.Context(), f.b.meta.RecordKey(gone))
			return err
		}
		return nil
	}
	res, err := reapHeldToModes(t, f, kd)
	if err != nil || !slices.Equal(res.Removed, []string{first}) || len(res.Gone) != 0 || len(res.Skipped) != 1 || !errors.Is(res.Skipped[gone], fs.ErrPermission) || res.Kept != 0 {
		t.Errorf("reap = %+v, %v; want %s removed, %s skipped with its dir's error (not gone, not kept)", res, err, first, gone)
	}
}
