package fsat

import (
	"testing"

	"golang.org/x/sys/unix"
)

// refuseFsids stands in for a seccomp filter that refuses setfsuid and
// setfsgid (the ids in force stay root's).
func refuseFsids(t *testing.T) {
	setfsuid = func(int) (int, error) { return 0, unix.EPERM }
	setfsgid = func(int) (int, error) { return 0, unix.EPERM }
	t.Cleanup(func() { setfsuid, setfsgid = unix.SetfsuidRetUid, unix.SetfsgidRetGid })
}

// countFsids counts the setfsuid calls that change an id into asked.
func countFsids(t *testing.T, asked *int) {
	setfsuid = func(uid int) (int, error) {
		if uid != -1 {
			*asked++
		}
		return unix.SetfsuidRetUid(uid)
	}
	t.Cleanup(func() { setfsuid = unix.SetfsuidRetUid })
}
