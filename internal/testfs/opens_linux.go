package testfs

import (
	"encoding/binary"
	"os"

	"golang.org/x/sys/unix"
)

// WatchedNullDevice makes path a device node (MknodNull's, whose open is
// harmless), watches it with inotify and returns a function that counts
// the opens of it since the last call, and a stop. It proves the watch
// works by opening the node once itself. An error means no such node can
// be made or watched here; callers skip.
func WatchedNullDevice(path string) (opens func() int, stop func(), err error) {
	if err := MknodNull(path); err != nil {
		return nil, nil, err
	}
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, nil, err
	}
	if _, err := unix.InotifyAddWatch(fd, path, unix.IN_OPEN); err != nil {
		unix.Close(fd)
		return nil, nil, err
	}
	opens = func() int {
		n := 0
		buf := make([]byte, 4096)
		for {
			m, err := unix.Read(fd, buf)
			if err != nil || m <= 0 {
				return n
			}
			for off := 0; off+unix.SizeofInotifyEvent <= m; {
				if binary.NativeEndian.Uint32(buf[off+4:])&unix.IN_OPEN != 0 {
					n++
				}
				off += unix.SizeofInotifyEvent + int(binary.NativeEndian.Uint32(buf[off+12:]))
			}
		}
	}
	stop = func() { unix.Close(fd) }
	// By path: the node is the one just made, in the calling test's own
	// temporary dir, and opening it is the point (the watch must see it).
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err == nil {
		f.Close()
	}
	if n := opens(); err != nil || n != 1 {
		stop()
		return nil, nil, &os.PathError{Op: "watch opens", Path: path, Err: unix.ENOTSUP}
	}
	return opens, stop, nil
}
