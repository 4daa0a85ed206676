package migrate

import (
	"testing"

	"golang.org/x/sys/unix"
)

// syncfs writes back the filesystem holding dir, so that a figure's disk
// use counts allocated blocks.
func syncfs(t *testing.T, dir string) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	must(t, err)
	defer unix.Close(fd)
	must(t, unix.Syncfs(fd))
}
