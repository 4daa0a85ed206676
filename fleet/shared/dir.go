package shared

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"sessdb/internal/faults"
)

// DirErr tells whether dir, the transcripts dir, is itself usable: nil,
// or ErrDirUnavailable with why (gone, not a directory, stale: any stat
// of it that fails). A caller asks only once something below dir was
// found gone or failing, so the path that finds files costs nothing more:
// without it, an export that went away reads as every key's file lost.
//
// The stat is then asked of the server (askServer: on Linux, statx with
// AT_STATX_FORCE_SYNC): an NFS client answers a plain stat of its mount's
// root from its attribute cache, for up to acdirmax (60 s by default)
// after the export went stale, while every open below it fails ESTALE.
func DirErr(dir string) error {
	fi, err := statDir(dir)
	if err == nil && !fi.IsDir() {
		err = &os.PathError{Op: "stat", Path: dir, Err: unix.ENOTDIR}
	}
	if err == nil {
		err = askServer(dir)
	}
	if err != nil {
		return fmt.Errorf("%w: %w", ErrDirUnavailable, err)
	}
	return nil
}

// DirErrOr is err, an open or a listing of dir, the transcripts dir,
// that failed, as DirErr tells it: ErrDirUnavailable when dir itself is
// gone, not a directory or stale, else err as it is.
func DirErrOr(dir string, err error) error {
	if derr := DirErr(dir); derr != nil {
		return derr
	}
	return err
}

// statDir is os.Stat of the transcripts dir, behind the fault point a
// test stands in for a stale export with (faults.SharedDirStat; fleet's
// Open has its own, not exported from here: a seam is no API).
func statDir(dir string) (os.FileInfo, error) {
	if err := faults.At(faults.SharedDirStat); err != nil {
		return nil, &os.PathError{Op: "stat", Path: dir, Err: err}
	}
	return os.Stat(dir)
}
