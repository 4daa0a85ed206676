package fsat

import (
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// accessACLName is the extended attribute the kernel keeps a file's
// POSIX access ACL in (linux/posix_acl_xattr.h).
const accessACLName = "system.posix_acl_access"

// AccessACL returns the access ACL of path, a name in dir or a name in a
// directory named in dir ("key/meta.db"), in the kernel's binary form,
// where st (the caller's lstat of it) is still what is there; nil where it
// has none, the file system keeps none, or what is there now is another
// file. No link is followed: each name is opened O_PATH|O_NOFOLLOW (which
// needs none of its bits), and the attribute read through the
// descriptor's /proc/self/fd link, which leads to that inode.
func AccessACL(dir *os.File, path string, st *unix.Stat_t) ([]byte, error) {
	dirfd := int(dir.Fd())
	if parent, name, ok := strings.Cut(path, "/"); ok {
		pfd, err := IgnoringEINTR(func() (int, error) {
			return unix.Openat(dirfd, parent, unix.O_PATH|unix.O_NOFOLLOW|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		})
		if err != nil {
			return nil, &os.PathError{Op: "open", Path: Join(dir, parent), Err: err}
		}
		defer unix.Close(pfd)
		dirfd, path = pfd, name
	}
	fd, err := IgnoringEINTR(func() (int, error) {
		return unix.Openat(dirfd, path, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: Join(dir, path), Err: err}
	}
	defer unix.Close(fd)
	var now unix.Stat_t
	if _, err := IgnoringEINTR(func() (struct{}, error) { return struct{}{}, unix.Fstat(fd, &now) }); err != nil {
		return nil, &os.PathError{Op: "fstat", Path: Join(dir, path), Err: err}
	}
	if now.Dev != st.Dev || now.Ino != st.Ino || !IsDir(&now) && !IsRegular(&now) {
		return nil, nil // swapped since the look: judged as it was
	}
	proc := "/proc/self/fd/" + strconv.Itoa(fd)
	for {
		n, err := unix.Getxattr(proc, accessACLName, nil)
		if err == unix.ENODATA || err == unix.EOPNOTSUPP {
			return nil, nil
		}
		if err != nil {
			return nil, &os.PathError{Op: "getxattr", Path: Join(dir, path), Err: err}
		}
		acl := make([]byte, n)
		n, err = unix.Getxattr(proc, accessACLName, acl)
		if err == unix.ERANGE {
			continue // grown since the size was asked
		}
		if err != nil {
			return nil, &os.PathError{Op: "getxattr", Path: Join(dir, path), Err: err}
		}
		return acl[:n], nil
	}
}
