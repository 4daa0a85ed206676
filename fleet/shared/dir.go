package shared

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// DirErr tells whether dir, the transcripts dir, is itself usable: nil,
// or ErrDirUnavailable with why (gone, not a directory, stale: any stat
// of it that fails). A caller asks only once something below dir was
// found gone or failing, so the path that finds files costs nothing more:
// without it, an export that went away reads as every key's file lost.
func DirErr(dir string) error {
	fi, err := statDir(dir)
	if err == nil && !fi.IsDir() {
		err = &os.PathError{Op: "stat", Path: dir, Err: unix.ENOTDIR}
	}
	if err != nil {
		return fmt.Errorf("%w: %w", ErrDirUnavailable, err)
	}
	return nil
}

// statDir is os.Stat; a variable so that a test can stand in for a
// stale export (ESTALE), which no test can make without root.
var statDir = os.Stat
