package db

import (
	"errors"
	"os"
	"runtime/debug"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/internal/dirflock"
)

// noDirFlocks are the file systems that cannot flock a directory, as
// internal/dirflock plays them: flock(2) of a key dir fails with err, or,
// with err nil, succeeds and locks nothing.
var noDirFlocks = []struct {
	name string
	err  error
}{
	{"EINVAL", unix.EINVAL},         // FreeBSD's NFSv4 client: a lock of anything but a regular file
	{"EOPNOTSUPP", unix.EOPNOTSUPP}, // FreeBSD's smbfs: a lock of a directory
	{"ENOLCK", unix.ENOLCK},         // an NFS mount with no lock manager (meta.db's fails there too)
	{"ignored", nil},                // macOS's NFS client: flock returns 0 on a directory, locks nothing
}

// noDirFlock has every key dir's flock go as on such a file system until
// the test ends.
func noDirFlock(t *testing.T, err error) {
	restore := dirflock.Ignore
	if err != nil {
		restore = func() func() { return dirflock.Refuse(err) }
	}
	t.Cleanup(restore())
}

// tryFlock is flock(LOCK_NB) of meta.db through a descriptor of its own,
// another open file description, as another process's open takes it: nil
// if had (and let go at once), EWOULDBLOCK if an open holds it.
func tryFlock(t *testing.T, kd keyDir, how int) error {
	t.Helper()
	f, err := os.Open(kd.db)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return unix.Flock(int(f.Fd()), how|unix.LOCK_NB)
}

// Where a key dir cannot be flocked there is no turnstile, and meta.db's
// own flock orders the key, as before the turnstile: a writer's open
// creates, writes and excludes every other open, a reader's shares with
// readers only, and a writer in another process keeps both out until
// their lock timeout. A writer's open with HoldTurnstile holds nothing
// more and closes clean (its lock and every descriptor let go);
// AwaitTurnstile beside it has nothing to wait for: it returns the flock's
// error at once, or nil where the flock is had and locks nothing, with a
// timeout of an hour. LockExclusive takes meta.db's flock. (docs/platforms.md,
// item 8.)
func TestWhereAKeyDirCannotBeFlockedMetaDBsFlockOrdersTheKey(t *testing.T) {
	for _, fs := range noDirFlocks {
		t.Run(fs.name, func(t *testing.T) {
			noDirFlock(t, fs.err)
			if runHolder(t) {
				return
			}
			kd := newKeyDir(t)

			w, err := OpenWriter(kd.dir, kd.db, testOpts)
			if err != nil {
				t.Fatalf("a writer's open: %v", err)
			}
			populate(t, w, 3)
			for _, how := range []int{unix.LOCK_SH, unix.LOCK_EX} {
				if err := tryFlock(t, kd, how); err != unix.EWOULDBLOCK {
					t.Errorf("flock(%d) of meta.db beside a writer: %v; want EWOULDBLOCK", how, err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}

			r, err := OpenReader(kd.dir, kd.db, testOpts)
			if err != nil {
				t.Fatalf("a reader's open: %v", err)
			}
			var sc Sidecars
			var h []HistoryEntry
			err = r.View(func(tx *Tx) (err error) {
				if sc, err = tx.Sidecars(); err == nil {
					h, err = tx.History(0)
				}
				return err
			})
			if err != nil || sc.Transcript == nil || sc.Transcript.Gen != 7 || len(h) != 3 {
				t.Errorf("the reader read %+v, %d history entries, %v; want the writer's transcript (gen 7) and 3 entries", sc.Transcript, len(h), err)
			}
			if err := tryFlock(t, kd, unix.LOCK_EX); err != unix.EWOULDBLOCK {
				t.Errorf("an exclusive flock of meta.db beside a reader: %v; want EWOULDBLOCK", err)
			}
			if err := tryFlock(t, kd, unix.LOCK_SH); err != nil {
				t.Errorf("a shared flock of meta.db beside a reader: %v; want it had", err)
			}

			// check --repair's lock of a meta.db it opened: meta.db's flock.
			f, err := os.OpenFile(kd.db, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			if err := LockExclusive(kd.dir, f, 100*time.Millisecond); !errors.Is(err, ErrLockTimeout) {
				t.Errorf("LockExclusive beside a reader: %v; want ErrLockTimeout", err)
			}
			r.Close()
			if err := LockExclusive(kd.dir, f, 100*time.Millisecond); err != nil {
				t.Errorf("LockExclusive of a meta.db nobody holds: %v", err)
			}
			if err := tryFlock(t, kd, unix.LOCK_SH); err != unix.EWOULDBLOCK {
				t.Errorf("a shared flock of meta.db under LockExclusive: %v; want EWOULDBLOCK", err)
			}
			f.Close()

			// A writer in another process, with no turnstile either.
			end := holdInChild(t, kd.path, true)
			expectTimeout(t, kd, true, 200*time.Millisecond, "file lock")
			expectTimeout(t, kd, false, 200*time.Millisecond, "file lock")
			end(false)

			// No collection meanwhile: the finalizer of a leaked *os.File
			// would close it and hide the leak.
			defer debug.SetGCPercent(debug.SetGCPercent(-1))
			other := openKeyDir(t, kd.path)
			fds, err := os.ReadDir("/proc/self/fd")
			opts := testOpts
			opts.HoldTurnstile = true
			held, err2 := OpenWriter(kd.dir, kd.db, opts)
			if err2 != nil {
				t.Fatalf("a writer's open with HoldTurnstile: %v", err2)
			}
			if err := held.Update(func(tx *Tx) error { return tx.PutVenue("held") }); err != nil {
				t.Errorf("a write with HoldTurnstile: %v", err)
			}
			// Nothing held to wait for: an hour's wait would hang the test.
			err3 := AwaitTurnstile(other.dir, time.Hour)
			var pe *os.PathError
			switch {
			case fs.err == nil && err3 != nil:
				t.Errorf("AwaitTurnstile beside a writer holding the turnstile, flocks of dirs ignored: %v; want nil", err3)
			case fs.err != nil && (!errors.Is(err3, fs.err) || errors.Is(err3, ErrLockTimeout) || !errors.As(err3, &pe) || pe.Op != "flock" || pe.Path != kd.path):
				t.Errorf("AwaitTurnstile beside a writer holding the turnstile: %v; want a flock PathError of %s wrapping %v", err3, kd.path, fs.err)
			}
			if err := held.Close(); err != nil {
				t.Errorf("the close of a writer with HoldTurnstile: %v", err)
			}
			if n := keyLockCount(); n != 0 {
				t.Errorf("%d in-process locks held once every open closed", n)
			}
			if after, err4 := os.ReadDir("/proc/self/fd"); err == nil && err4 == nil && len(after) != len(fds) {
				t.Errorf("%d descriptors open before a writer's open with HoldTurnstile, %d after its close", len(fds), len(after))
			}
		})
	}
}
