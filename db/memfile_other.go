//go:build !linux

package db

import (
	"fmt"
	"os"
)

// memFile returns a file holding b, for bbolt to map instead of the file
// under check. Without memfd_create it is a temp file unlinked at once: it
// lives in the temp directory's filesystem, not in memory, and holds a
// copy of the checked pages until it is closed.
func memFile(name string, b []byte) (*os.File, error) {
	f, err := os.CreateTemp("", "sessdb-check-*")
	if err != nil {
		return nil, fmt.Errorf("check copy: %w", err)
	}
	os.Remove(f.Name())
	if _, err := f.WriteAt(b, 0); err != nil {
		f.Close()
		return nil, fmt.Errorf("check copy: %w", err)
	}
	return f, nil
}
