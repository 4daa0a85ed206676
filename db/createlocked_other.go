//go:build !linux

package db

// createLocked makes a new file at name in dirfd (failing if anything is
// there) and returns it open for writing with its flock held. Only Linux
// makes the file locked before it has a name (createlocked_linux.go); here
// it is locked right after its open, and a check in between sees a temp
// not locked.
func createLocked(dirfd int, name string) (int, error) {
	return createThenLock(dirfd, name)
}
