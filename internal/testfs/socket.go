package testfs

import (
	"net"
	"path/filepath"
	"testing"
)

// Socket makes path a unix socket, listening until t ends. A socket's
// path is bounded (108 bytes on Linux, 104 on macOS) and a test's temp
// dir is not: TMPDIR and the test's name make it, and with a TMPDIR of
// 75 bytes a bind at the path failed (EINVAL), where tests skipped the
// socket or dropped its case in silence. So the socket is bound at a
// short name for path's dir (listenShort) and is at path once made. It is
// left in place when t ends: its dir is a temp dir, removed with it.
func Socket(t testing.TB, path string) net.Listener {
	t.Helper()
	l, err := listenShort(filepath.Dir(path), filepath.Base(path))
	if err != nil {
		t.Fatalf("a unix socket at %s: %v", path, err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}
