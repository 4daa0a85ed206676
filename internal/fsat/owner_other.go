//go:build !linux

package fsat

import "golang.org/x/sys/unix"

// givesAway: without setfsuid a directory cannot be made as another user,
// and one made as root could only be given away by name; root's creations
// stay root's.
const givesAway = false

func mkdirAsDirOwner(int, string, uint32) (int, bool, error) { return 0, false, nil }

// unreadDirFlags open a directory for names in it and for its own mode
// (a job dir's parent for mkdirat, OpenDirUnread): without O_PATH, one
// that may not be read does not open (dirOpensUnread), and the job dir is
// made by its path instead (Mkdir).
const (
	unreadDirFlags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC
	dirOpensUnread = false
)
