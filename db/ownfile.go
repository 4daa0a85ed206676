package db

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"

	"sessdb/internal/faults"
)

// fileID names a file by device and inode.
type fileID struct{ dev, ino uint64 }

// tempNamesOf counts the names under the key dir's meta.db temp prefix that
// are st's file. Such a name is create's, left by a crash between its
// link and its unlink, and a second name of meta.db inside the key dir
// that check --repair removes: no reason for a copy. (A creation still in
// flight holds the temp's lock until after its unlink, and the caller
// holds meta.db's: none is.) An error reading the dir counts none, and the
// file is copied, which is always safe.
func tempNamesOf(dirfd int, st *unix.Stat_t) int {
	if testHookTempNames != nil {
		testHookTempNames()
	}
	fd, err := openat(dirfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0
	}
	dir := os.NewFile(uintptr(fd), ".")
	defer dir.Close()
	names, err := dir.Readdirnames(-1)
	if err != nil {
		return 0
	}
	n := 0
	for _, name := range names {
		var lst unix.Stat_t
		if strings.HasPrefix(name, TempPrefix) &&
			unix.Fstatat(dirfd, name, &lst, unix.AT_SYMLINK_NOFOLLOW) == nil &&
			lst.Dev == st.Dev && lst.Ino == st.Ino {
			n++
		}
	}
	return n
}

// testHookTempNames lets a test count the key dir's reads for temps.
var testHookTempNames func()

// ownFile gives a writer's meta.db a file of its own when it has more
// than one name, before anything is written to it. f is meta.db as the
// writer opened and exclusively locked it, st its fstat under the lock.
// bbolt commits in place, so without this every commit would change the
// file at each of its other names: a copy of the root made with hard links
// (cp -al, rsync --link-dest) would be no backup of meta.db, and a file
// outside the key dir would be written through a link.
//
// The copy is made under a temporary name, locked before anything can
// open it, made durable, and renamed over meta.db, so that meta.db is the
// old file or the whole copy, whatever the moment of a crash. A reader or
// writer waiting for the old file's lock finds, once it has it, that the
// name refers to another file, and opens the name again (openLocked), as
// when a reap unlinks meta.db under its lock. The copy keeps the file's
// owner, group and permission bits: a writer that may not give it that
// owner and group (neither root nor the owner, or the owner outside the
// file's group) fails. On error nothing has changed but, after the
// rename, the name, which then refers to the whole copy; f stays open and
// locked.
//
// before is Options.BeforeWrite, asked once more before the rename: the
// key dir may have been moved aside while the open waited for the lock.
func ownFile(dirfd int, f *os.File, st *unix.Stat_t, name string, before func() error) (_ *os.File, err error) {
	w, err := writesIn(dirfd, name)
	if err != nil {
		return nil, pathErr("copy", name, err)
	}
	defer w.close()
	tmp := tempName()
	// Locked before anything can open it (createLocked). Held from here,
	// the lock is the new meta.db's: an open that finds the name renamed
	// over waits for it like for any writer's, and a check sees the temp
	// as a writer's work in flight, not debris.
	fd, err := createLocked(dirfd, tmp)
	if err != nil {
		return nil, pathErr("copy", name, err)
	}
	// Named as the file it becomes: bbolt's errors name the file they are
	// about, and this one is meta.db from the rename on.
	file := os.NewFile(uintptr(fd), name)
	renamed := false
	defer func() {
		if err == nil {
			return
		}
		file.Close() // its flock with it: after the rename, meta.db's
		if !renamed {
			unix.Unlinkat(dirfd, tmp, 0) // garbage after a failure; the error already says why
		}
	}()
	// The copy is written here, not by bbolt: durable only once fsynced.
	if err := w.made(tmp, file, true); err != nil {
		return nil, pathErr("copy", name, err)
	}
	// Owned as the file it replaces: root's check --repair on a worker's
	// key would otherwise leave meta.db root's, and the worker locked out
	// of its own key. A writer that may not give it that owner and group
	// (neither root nor the owner, or the owner outside the file's group)
	// fails here, before anything changed, with an error that says why a
	// write needs a copy at all.
	var tst unix.Stat_t
	if err := unix.Fstat(fd, &tst); err != nil {
		return nil, pathErr("copy", name, fmt.Errorf("stat %s: %w", tmp, err))
	}
	if tst.Uid != st.Uid || tst.Gid != st.Gid {
		if err := unix.Fchown(fd, int(st.Uid), int(st.Gid)); err != nil {
			return nil, pathErr("copy", name, chownRefusal(st, tmp, err))
		}
	}
	if err := unix.Fchmod(fd, uint32(st.Mode&0o777)); err != nil {
		return nil, pathErr("copy", name, fmt.Errorf("chmod %s: %w", tmp, err))
	}
	if err := copySparse(file, f, st.Size); err != nil {
		return nil, pathErr("copy", name, fmt.Errorf("to %s: %w", tmp, err))
	}
	if err := w.syncFile(file); err != nil {
		return nil, pathErr("copy", name, fmt.Errorf("sync %s: %w", tmp, err))
	}
	if err := faults.At(faults.DBOwnFileBeforeRename); err != nil {
		return nil, pathErr("copy", name, err)
	}
	if before != nil {
		if err := before(); err != nil {
			return nil, err // the caller's own, unwrapped, as ensureExists returns it
		}
	}
	if err := w.rename(tmp, FileName); err != nil {
		return nil, pathErr("copy", name, fmt.Errorf("rename %s: %w", tmp, err))
	}
	renamed = true
	if err := faults.At(faults.DBOwnFileAfterRename); err != nil {
		return nil, pathErr("copy", name, err)
	}
	// Until the directory is durable a crash could bring the old file back
	// under the name after this writer's commits went into the copy.
	if err := w.syncDir(); err != nil {
		return nil, pathErr("copy", name, fmt.Errorf("sync directory: %w", err))
	}
	w.handed(file) // bbolt's commits fdatasync it from here on
	return file, nil
}

// copySparse copies the size bytes of src to dst, which is empty, with
// src's holes left holes: only its data is read and written, and dst is
// then extended to size. A meta.db is as long as bbolt last mapped it, or
// as a hostile file's hole makes it (a sparse 64 GiB file of a few KiB on
// disk): written out whole, the holes cost the open the time and disk of
// the file's size. Where the file system knows no holes (SEEK_DATA
// unsupported) the whole file is one extent of data.
//
// ReadFrom with an *os.File behind the limit copies in the kernel where it
// can (copy_file_range), from and to both files' offsets, set here; no one
// else reads src's or dst's offsets.
func copySparse(dst, src *os.File, size int64) error {
	for off := int64(0); off < size; {
		data, err := src.Seek(off, unix.SEEK_DATA)
		switch {
		case err == nil:
		case errors.Is(err, unix.ENXIO): // only hole from off on
			data = size
		case errors.Is(err, unix.EINVAL): // SEEK_DATA unknown here
			data = off
		default:
			return err
		}
		if data >= size {
			break
		}
		end := size
		if hole, err := src.Seek(data, unix.SEEK_HOLE); err == nil && hole < size {
			end = hole
		}
		if _, err := src.Seek(data, io.SeekStart); err != nil {
			return err
		}
		if _, err := dst.Seek(data, io.SeekStart); err != nil {
			return err
		}
		n, err := dst.ReadFrom(io.LimitReader(src, end-data))
		if err != nil {
			return err
		}
		if n != end-data {
			// Only a process that ignores the lock can cut the file short.
			return damaged("file changed under the lock: %d of %d bytes copied at %d", n, end-data, data)
		}
		off = end
	}
	// A hole where data was, read as the end: the file was cut short,
	// which only a process that ignores the lock can do.
	if fi, err := src.Stat(); err != nil {
		return err
	} else if fi.Size() < size {
		return damaged("file changed under the lock: %d bytes, %d when locked", fi.Size(), size)
	}
	// The hole at the end, if any: the copy is as long as the file.
	return dst.Truncate(size)
}

// chownRefusal is ownFile's refusal to give its copy tmp the owner and
// group of meta.db (st), cause the chown's error.
func chownRefusal(st *unix.Stat_t, tmp string, cause error) error {
	return fmt.Errorf("meta.db has %d names (a hard link), so a writer gives it a file of its own first, with its owner and group; this one may not (only root, or the owner in the file's group, may): chown %s to %d:%d: %w",
		st.Nlink, tmp, st.Uid, st.Gid, cause)
}

// MayOwnCopy is nil when this process may give a copy of meta.db, whose
// lstat is st, made in the key dir kd, st's owner and group, as a
// writer's open of a meta.db with more than one name does (ownFile):
// one that may chown any file (root, or CAP_CHOWN on Linux) may; any
// other only where it is the file's owner and the copy's group is the
// file's or one of its own. Else the refusal ownFile would return, but
// for the "copy <path>" around it, the temp's random part said
// "<random>". A look, for a dry run: it changes nothing, and a look that
// fails (kd's stat) judges nothing (the run meets it itself).
func MayOwnCopy(kd *os.File, st *unix.Stat_t) error {
	if mayChownAny() {
		return nil
	}
	var dst unix.Stat_t
	if err := unix.Fstat(int(kd.Fd()), &dst); err != nil {
		return nil
	}
	// The copy's group as the kernel gives a new file: the dir's where
	// the dir is set-group-ID (on Linux) or always (BSD, macOS), else
	// this process's.
	gid := uint32(unix.Getegid())
	if runtime.GOOS != "linux" || dst.Mode&unix.S_ISGID != 0 {
		gid = dst.Gid
	}
	uid := uint32(unix.Geteuid())
	if st.Uid == uid && (st.Gid == gid || inGroup(st.Gid)) {
		return nil
	}
	return chownRefusal(st, TempPrefix+"<random>", unix.EPERM)
}

// inGroup reports whether gid is this process's effective group or one of
// its supplementary groups, where its owner may give a file that group.
func inGroup(gid uint32) bool {
	if gid == uint32(unix.Getegid()) {
		return true
	}
	groups, err := unix.Getgroups()
	if err != nil {
		return false
	}
	for _, g := range groups {
		if uint32(g) == gid {
			return true
		}
	}
	return false
}
