package store

import (
	"errors"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/durable"
	"sessdb/internal/faults"
	"sessdb/internal/fsat"
	"sessdb/internal/testfs"
)

// atRmdir is a disk that, at the rmdir of a key dir (a reap-owned one, or
// a key's own), counts the process's descriptors of the meta.db unlinked
// from it and asks whether a look at the dir would still wait.
type atRmdir struct {
	durable.Disk
	meta   *unix.Stat_t // the meta.db unlinked last
	open   int          // its descriptors at the rmdir, -1 without /proc
	waited bool         // a look at the dir waited for the reap then
	rmdirs int
}

func (d *atRmdir) Remove(dir *os.File, name string) error {
	st, err := fsat.LstatAt(dir, name)
	if err == nil && name == db.FileName {
		d.meta = &st
	}
	if err == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR && d.meta != nil {
		d.rmdirs++
		if n, ok := testfs.DescriptorsOf(uint64(d.meta.Dev), d.meta.Ino); ok {
			d.open = n
		} else {
			d.open = -1
		}
		if kd, err := fsat.OpenDirAt(dir, name); err == nil {
			d.waited = errors.Is(db.AwaitTurnstile(kd, 20*time.Millisecond), db.ErrLockTimeout)
			kd.Close()
		}
	}
	return d.Disk.Remove(dir, name)
}

// By the rmdir of a key dir, a reap holds no descriptor of the meta.db it
// unlinked from it, and still keeps a look at the dir waiting: NFS
// (.nfsNNNN) and libfuse's file systems (.fuse_hiddenNNNN: sshfs, s3fs)
// keep an open file they were told to unlink under a hidden name until
// its last close, so the dir was not empty, and on sshfs every reap failed
// every key ("remove .reaped-…: directory not empty"), leaving the
// reap-owned dir for the next. So for a key renamed aside, one removed in
// place, and a reap-owned dir a stopped reap left, finished by the next.
func TestAReapClosesMetaDBBeforeItsRmdir(t *testing.T) {
	for _, c := range []string{"renamed aside", "removed in place", "finished"} {
		t.Run(c, func(t *testing.T) {
			s, root, clock := newTestStore(t, gates.Bounds{TTL: opsTTL})
			fresh, _ := expiredBesideFresh(t, s, root, clock)
			if c == "finished" {
				interrupt(t, s, root, clock, "", faults.ReapAfterRename, false, func() { s.Reap(false) })
			}
			disk := &atRmdir{}
			s.disk = diskWrites{disk}
			if c == "removed in place" {
				s.disk = diskWrites{roomless(disk)}
			}
			res, err := s.Reap(false)
			done := res.Removed
			if c == "finished" {
				done = res.Finished
			}
			if err != nil || len(done) != 1 || len(res.Skipped) != 0 {
				t.Fatalf("reap = %+v, %v; want one key %s", res, err, c)
			}
			// A reap of a key holds its turnstile to the end; one that
			// finishes another's dir holds none (a look there reports
			// the interrupted reap it is finishing).
			if disk.rmdirs != 1 || disk.open > 0 || disk.waited != (c != "finished") {
				t.Errorf("at the rmdir: %d rmdirs, %d descriptors of the meta.db unlinked (-1: not counted here), a look waited %t; want 1, 0, %t", disk.rmdirs, disk.open, disk.waited, c != "finished")
			}
			leftOnly(t, root, fresh)
			if disk.open < 0 {
				t.Skip("no /proc/self/fd here: the descriptors were not counted")
			}
		})
	}
}
