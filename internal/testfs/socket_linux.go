package testfs

import (
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// listenShort binds name in dir through /proc/self/fd/N, a name of dir
// short whatever dir's own. The listener does not unlink on Close: N is
// closed by then, and may name another dir.
func listenShort(dir, name string) (net.Listener, error) {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", dir, err)
	}
	defer unix.Close(fd)
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: fmt.Sprintf("/proc/self/fd/%d/%s", fd, name), Net: "unix"})
	if err != nil {
		return nil, err
	}
	l.SetUnlinkOnClose(false)
	return l, nil
}
