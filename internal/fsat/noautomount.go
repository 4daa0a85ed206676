package fsat

import (
	"errors"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrAutomount is StatNoAutomount's answer where the path goes through a
// directory of an automounter's file system (autofs), in which no name is
// looked up: the answer is unknown.
var ErrAutomount = errors.New("the path goes through an automounted directory, which is not looked in")

// TestHookAutomountDir is asked, where set, alongside the file system's
// type whether the directory open as fd is an automounter's (a test's
// stand-in for an autofs mount, which a test cannot make).
var TestHookAutomountDir func(fd int) bool

// maxLinks is how many symbolic links StatNoAutomount follows in a path,
// as Linux's ELOOP bound.
const maxLinks = 40

// StatNoAutomount is stat(2) of path (links followed), looked up one name
// at a time, where no name is ever looked up in a directory of an
// automounter's file system: a lookup there, of a name not yet mounted,
// sends it to the automount daemon (autofs: /net/<host> makes it resolve
// and mount that host), whatever AT_NO_AUTOMOUNT says (a name not yet
// there must be mounted to be found), and can hang on a host that does
// not answer. Such a path is ErrAutomount. A name that is a direct map's
// trigger (an autofs mount in an ordinary directory) is looked at with
// AT_NO_AUTOMOUNT and opened without crossing into it (on Linux: O_PATH,
// no directory intent), and the walk stops there too. For a look at a path that is not sessdb's to mount:
// a value that may be a secret, or a name a file holds.
func StatNoAutomount(path string) (unix.Stat_t, error) {
	var st unix.Stat_t
	if path == "" {
		return st, &os.PathError{Op: "stat", Path: path, Err: unix.ENOENT}
	}
	dir, err := openWalkStart(path)
	if err != nil {
		return st, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	defer func() { unix.Close(dir) }()
	names := strings.Split(path, "/")
	links := 0
	for len(names) > 0 {
		name := names[0]
		names = names[1:]
		if name == "" || name == "." {
			continue
		}
		if automountDir(dir) {
			return st, ErrAutomount
		}
		if err := unix.Fstatat(dir, name, &st, lstatFlags); err != nil {
			return st, &os.PathError{Op: "stat", Path: path, Err: err}
		}
		switch {
		case st.Mode&unix.S_IFMT == unix.S_IFLNK:
			buf := make([]byte, 4096)
			n, err := unix.Readlinkat(dir, name, buf)
			if err != nil {
				return st, &os.PathError{Op: "stat", Path: path, Err: err}
			}
			if links++; links > maxLinks {
				return st, &os.PathError{Op: "stat", Path: path, Err: unix.ELOOP}
			}
			target := string(buf[:n])
			names = append(strings.Split(target, "/"), names...)
			if strings.HasPrefix(target, "/") {
				root, err := openWalkStart("/")
				if err != nil {
					return st, &os.PathError{Op: "stat", Path: path, Err: err}
				}
				unix.Close(dir)
				dir = root
			}
		case !IsDir(&st):
			// Any name left, "" or "." too (a trailing slash, as given
			// or in a link's target), asks for a directory: stat(2)
			// says ENOTDIR of "file/".
			if len(names) > 0 {
				return st, &os.PathError{Op: "stat", Path: path, Err: unix.ENOTDIR}
			}
			return st, nil
		default:
			fd, err := openDirNoCross(dir, name)
			if err != nil {
				return st, &os.PathError{Op: "stat", Path: path, Err: err}
			}
			unix.Close(dir)
			dir = fd
		}
	}
	if err := unix.Fstat(dir, &st); err != nil {
		return st, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	return st, nil
}

// automountDir reports whether the directory open as fd is on an
// automounter's file system.
func automountDir(fd int) bool {
	if TestHookAutomountDir != nil && TestHookAutomountDir(fd) {
		return true
	}
	return onAutofs(fd)
}

// openWalkStart opens where a walk of path begins: / or the working dir.
func openWalkStart(path string) (int, error) {
	start := "."
	if path[0] == '/' {
		start = "/"
	}
	return IgnoringEINTR(func() (int, error) { return unix.Open(start, walkStartFlags, 0) })
}
