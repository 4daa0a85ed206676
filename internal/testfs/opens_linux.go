package testfs

import (
	"encoding/binary"
	"os"

	"golang.org/x/sys/unix"
)

// WatchOpens watches path with inotify and returns a function that counts
// the opens of it since the last call, and a stop. It proves the watch
// works by opening path once itself (a device node at path is opened:
// plant one whose open is harmless, MknodNull's). An error means opens
// cannot be watched here; callers skip.
func WatchOpens(path string) (opens func() int, stop func(), err error) {
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
