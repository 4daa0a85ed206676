//go:build !linux

package testfs

import (
	"net"
	"os"
	"path/filepath"
)

// listenShort binds in a new dir under /tmp, then renames the socket to
// name in dir (the listener keeps it: a socket is its inode). Where /tmp
// is another file system than dir the rename fails, and says so.
func listenShort(dir, name string) (net.Listener, error) {
	short, err := os.MkdirTemp("/tmp", "sessdb-sock-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(short)
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(short, "s"), Net: "unix"})
	if err != nil {
		return nil, err
	}
	l.SetUnlinkOnClose(false)
	if err := os.Rename(filepath.Join(short, "s"), filepath.Join(dir, name)); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}
