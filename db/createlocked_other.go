//go:build !linux

package db

import "time"

// createLocked makes a new file at name in dirfd (failing if anything is
// there) and returns it open for writing with its flock held. Only Linux
// makes the file locked before it has a name (createlocked_linux.go); here
// it is locked right after its open, and a check in between sees a temp
// not locked.
func createLocked(dirfd int, name string) (int, error) {
	return createThenLock(dirfd, name)
}

// createLockedBy is createLocked waiting no later than deadline (see
// createThenLockBy).
func createLockedBy(dirfd int, name string, deadline time.Time) (int, error) {
	return createThenLockBy(dirfd, name, deadline)
}
