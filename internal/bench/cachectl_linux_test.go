package bench

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"unsafe"

	"golang.org/x/sys/unix"
)

// DropCache evicts the page-cache pages of every file under the given
// roots with posix_fadvise(POSIX_FADV_DONTNEED). The files must be clean
// (written back): the kernel keeps dirty pages and pages under writeback,
// so a caller that just wrote them calls SyncFS first.
//
// Why not drop_caches: it is machine-wide, on a machine shared with other
// engineers' runs. The cost of this choice: directory entries and inodes
// stay cached, so a cold run here is "data cold, metadata warm".
//
// A root on a file system whose pages the advice does not evict has no
// cold run to give: tmpfs and ramfs (TMPDIR on /dev/shm), whose pages are
// their files, and FUSE, which kept them (go-fuse's loopback). DropCache
// then returns an error that unwraps to errors.ErrUnsupported, as where
// there is no cache control at all, and the cold benchmarks skip rather
// than fail on pages still resident.
func DropCache(roots ...string) (files int, err error) {
	for _, root := range roots {
		if why := noEviction(root); why != "" {
			return files, fmt.Errorf("page cache of %s: %s, nothing can be evicted: %w", root, why, errors.ErrUnsupported)
		}
		err = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return err
			}
			fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
			if err != nil {
				return &os.PathError{Op: "open", Path: p, Err: err}
			}
			defer unix.Close(fd)
			if err := unix.Fadvise(fd, 0, 0, unix.FADV_DONTNEED); err != nil {
				return &os.PathError{Op: "fadvise", Path: p, Err: err}
			}
			files++
			return nil
		})
		if err != nil {
			return files, err
		}
	}
	return files, nil
}

// SyncFS writes back every dirty page of the filesystem holding path, so
// that DropCache can evict them.
func SyncFS(path string) error {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	if err := unix.Syncfs(fd); err != nil {
		return &os.PathError{Op: "syncfs", Path: path, Err: err}
	}
	return nil
}

// Resident reports how many of the pages of the file at path are in the
// page cache (mincore over a read-only mapping), and how many it has.
func Resident(path string) (resident, pages int, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return 0, 0, err
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return 0, 0, &os.PathError{Op: "mmap", Path: path, Err: err}
	}
	defer unix.Munmap(m)
	ps := os.Getpagesize()
	vec := make([]byte, (len(m)+ps-1)/ps)
	// x/sys/unix has no wrapper for mincore.
	_, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0])))
	if errno != 0 {
		return 0, 0, &os.PathError{Op: "mincore", Path: path, Err: errno}
	}
	for _, v := range vec {
		resident += int(v & 1)
	}
	return resident, len(vec), nil
}

// fsTopDirFL is FS_TOPDIR_FL from linux/fs.h; x/sys/unix does not export
// it.
const fsTopDirFL = 0x00020000

// SetTopDir marks dir as the top of a directory hierarchy (chattr +T,
// FS_TOPDIR_FL), so that ext4 places each of its new subdirectories in a
// block group of its own choosing rather than beside dir. It reports
// whether the flag was set; a filesystem that does not know it is not an
// error the benchmarks care about.
func SetTopDir(dir string) bool {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	flags, err := unix.IoctlGetUint32(fd, unix.FS_IOC_GETFLAGS)
	if err != nil {
		return false
	}
	return unix.IoctlSetPointerInt(fd, unix.FS_IOC_SETFLAGS, int(flags|fsTopDirFL)) == nil
}

// noEviction says why the pages of the files under path are not evicted
// by the advice, naming path's file system, or "" (also when statfs
// fails: DropCache's own open then says why).
func noEviction(path string) string {
	var st unix.Statfs_t
	if unix.Statfs(path, &st) != nil {
		return ""
	}
	switch uint32(st.Type) {
	case unix.TMPFS_MAGIC:
		return "tmpfs keeps its files in memory"
	case unix.RAMFS_MAGIC:
		return "ramfs keeps its files in memory"
	case unix.FUSE_SUPER_MAGIC:
		return "a FUSE mount keeps the pages its daemon asks it to"
	}
	return ""
}
