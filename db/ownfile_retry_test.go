package db

import (
	"io/fs"
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"sessdb/internal/faults"
)

// giveOwnFile does what another process's writer does to kd's hard-linked
// meta.db: under the file's exclusive lock, it gives it a file of its own.
func giveOwnFile(t *testing.T, kd keyDir) {
	t.Helper()
	fd, err := unix.Openat(int(kd.dir.Fd()), FileName, unix.O_RDWR|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fd), kd.db)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	if err := unix.Fstat(fd, &st); err != nil {
		t.Fatal(err)
	}
	own, err := ownFile(int(kd.dir.Fd()), f, &st, kd.db, nil)
	if err != nil {
		t.Fatal(err)
	}
	own.Close()
}

// An open waiting for a hard-linked meta.db's lock while another process's
// writer gives the file a copy of its own, and then a reap or a check
// --repair removes the copy under its lock, was replaced twice and gave up
// with ErrLockTimeout. The copy is not a replacement the open's budget
// was made for (it changes which file the name leads to, never what the
// key holds): the open goes on as it does after one removal alone, a
// writer making meta.db anew, a reader finding none.
func TestACopyAndARemovalUnderAWaitingOpen(t *testing.T) {
	for _, write := range []bool{true, false} {
		name := map[bool]string{true: "writer", false: "reader"}[write]
		t.Run(name, func(t *testing.T) {
			kd := makeDB(t, 0)
			hardLink(t, kd)
			opened := 0
			faults.Set(func(p faults.Point) error {
				if p != faults.DBOpenBeforeLock {
					return nil
				}
				switch opened++; opened {
				case 1:
					giveOwnFile(t, kd)
				case 2:
					if err := os.Remove(kd.db); err != nil {
						t.Error(err)
					}
				}
				return nil
			})
			defer faults.Set(nil)
			open := OpenReader
			if write {
				open = OpenWriter
			}
			d, err := open(kd.dir, kd.db, testOpts)
			faults.Set(nil)
			if !write {
				wantErr(t, err, fs.ErrNotExist)
				return
			}
			if err != nil {
				t.Fatalf("the writer's open: %v", err)
			}
			d.Close()
			if opened != 3 {
				t.Errorf("meta.db opened %d times, want 3 (the linked file, its copy, the file made anew)", opened)
			}
		})
	}
}
