package db

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// memFile returns an anonymous file in memory holding b, for bbolt to map
// instead of the file under check.
func memFile(name string, b []byte) (*os.File, error) {
	// Anonymous memory: the copy needs no writable directory, leaves
	// nothing behind if the process dies, and no other process can cut it
	// short under bbolt's mapping, which is the point of the copy.
	fd, err := unix.MemfdCreate("sessdb-check", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("memfd: %w", err)
	}
	f := os.NewFile(uintptr(fd), name)
	if _, err := f.WriteAt(b, 0); err != nil {
		f.Close()
		return nil, fmt.Errorf("memfd: %w", err)
	}
	return f, nil
}
