package db

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// A read of meta.db under its lock is checked afterwards against the
// file's stamp, its size and modification time when the lock was had. No
// sessdb process writes the file under another's lock, but a process that
// ignores the lock can: a `cp` of a backup over the live file, which cuts
// it short and writes it again. bbolt's pages carry no checksum, so a
// reader that met such a write half done would take a torn page for the
// file's (1 in 206,501 reads in .ci/long's truncation test before this
// check). A write moves the modification time on, so the read is then
// refused as damage, as a file cut short under the lock already was. A
// file system whose timestamps are coarser than the time between two
// writes may show the second with the first's time: there the size alone
// tells (Linux 6.13 and later give a file whose time was just read a
// finer one at its next write).
type fileStamp struct {
	size  int64
	mtime unix.Timespec
}

func stampOf(st *unix.Stat_t) fileStamp { return fileStamp{size: st.Size, mtime: st.Mtim} }

// unchangedSince returns ErrDamaged when f's stamp is no longer was.
func unchangedSince(f *os.File, was fileStamp) error {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return err
	}
	if now := stampOf(&st); now != was {
		return damaged("file written under the lock while it was read (%d bytes modified at %s, then %d bytes at %s)",
			was.size, stampTime(was.mtime), now.size, stampTime(now.mtime))
	}
	return nil
}

func stampTime(ts unix.Timespec) string {
	return time.Unix(ts.Unix()).UTC().Format(time.RFC3339Nano)
}
