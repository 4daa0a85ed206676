package store

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// dirWatch is an inotify watch on one directory: it reports every event on
// the directory itself and on the names in it.
type dirWatch struct{ fd int }

func watchDir(t *testing.T, dir string) *dirWatch {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Logf("no inotify (%v): B is checked by its flock and its tree only", err)
		return nil
	}
	// Everything but B being moved itself, which is the test's own doing.
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_ALL_EVENTS&^unix.IN_MOVE_SELF|unix.IN_ONLYDIR); err != nil {
		unix.Close(fd)
		t.Logf("no inotify watch (%v): B is checked by its flock and its tree only", err)
		return nil
	}
	return &dirWatch{fd: fd}
}

var inotifyNames = []struct {
	bit  uint32
	name string
}{
	{unix.IN_ACCESS, "access"}, {unix.IN_MODIFY, "modify"}, {unix.IN_ATTRIB, "attrib"},
	{unix.IN_CLOSE_WRITE, "close-write"}, {unix.IN_CLOSE_NOWRITE, "close-nowrite"},
	{unix.IN_OPEN, "open"}, {unix.IN_MOVED_FROM, "moved-from"}, {unix.IN_MOVED_TO, "moved-to"},
	{unix.IN_CREATE, "create"}, {unix.IN_DELETE, "delete"}, {unix.IN_DELETE_SELF, "delete-self"},
	{unix.IN_ISDIR, "isdir"}, {unix.IN_Q_OVERFLOW, "overflow"},
}

// events drains what the watch saw, as "name: op|op" ("." is the
// directory itself).
func (w *dirWatch) events() []string {
	var out []string
	buf := make([]byte, 64<<10)
	for {
		n, err := unix.Read(w.fd, buf)
		if err != nil || n <= 0 {
			return out
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			mask := binary.NativeEndian.Uint32(buf[off+4:])
			l := int(binary.NativeEndian.Uint32(buf[off+12:]))
			name := string(bytes.TrimRight(buf[off+unix.SizeofInotifyEvent:off+unix.SizeofInotifyEvent+l], "\x00"))
			if name == "" {
				name = "."
			}
			var ops []string
			for _, b := range inotifyNames {
				if mask&b.bit != 0 {
					ops = append(ops, b.name)
				}
			}
			if mask&unix.IN_IGNORED == 0 {
				out = append(out, name+": "+strings.Join(ops, "|"))
			}
			off += unix.SizeofInotifyEvent + l
		}
	}
}

func (w *dirWatch) close() { unix.Close(w.fd) }
