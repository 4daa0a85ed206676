package store

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"sessdb/internal/faults"
	"sessdb/internal/fsat"
)

// The job dir is foreign ground: the worker made it, and the job's
// container can write anything under <job-dir>/session/ (links, FIFOs,
// devices, hard links to files it can see). Every name under it is reached
// relative to a descriptor of the job dir, never through a link, and
// nothing is ever opened for writing that the store did not just create.

// openJobDir opens the job dir, making it (0700, its last component only)
// when it does not exist yet: the worker names it, so its path is trusted
// as the sessions root's is, and a missing parent is still an error.
func openJobDir(path string) (*os.File, error) {
	jd, err := fsat.OpenDir(path)
	if fsat.IsNotExist(err) {
		if merr := os.Mkdir(path, 0o700); merr != nil && !os.IsExist(merr) {
			return nil, merr
		}
		jd, err = fsat.OpenDir(path)
	}
	return jd, err
}

// stagedDir makes <jobDir>/session (0700, a real directory, never a link)
// and returns it opened.
func stagedDir(jd *os.File) (*os.File, error) {
	if err := fsat.MkdirAt(jd, StagedDirName, 0o700); err != nil {
		return nil, err
	}
	dir, err := fsat.OpenDirAt(jd, StagedDirName)
	if err != nil {
		return nil, err
	}
	// The dir may have been there already, with any mode.
	if err := unix.Fchmod(int(dir.Fd()), 0o700); err != nil {
		dir.Close()
		return nil, &os.PathError{Op: "chmod", Path: dir.Name(), Err: err}
	}
	return dir, nil
}

// createStaged creates dir/current.jsonl afresh, empty, 0600: a cold start
// unless the copy fills it. Whatever regular file or link was at the name
// is unlinked first, never opened: truncating a name that is a hard link
// to another key's transcript would empty that transcript. A directory, a
// FIFO, a device or a socket there is ErrStagedNotFile.
func createStaged(dir *os.File) (*os.File, error) {
	st, err := fsat.LstatAt(dir, TranscriptName)
	switch {
	case fsat.IsNotExist(err):
	case err != nil:
		return nil, err
	case fsat.IsRegular(&st) || st.Mode&unix.S_IFMT == unix.S_IFLNK:
		if err := fsat.UnlinkAt(dir, TranscriptName); err != nil && !fsat.IsNotExist(err) {
			return nil, err
		}
	default:
		return nil, &os.PathError{Op: "stage", Path: fsat.Join(dir, TranscriptName), Err: ErrStagedNotFile}
	}
	if err := faults.At(faults.StagedAfterUnlink); err != nil {
		return nil, fmt.Errorf("stage: %w", err)
	}
	// O_EXCL: if anything appeared at the name since the unlink, the
	// create fails instead of opening it.
	f, err := fsat.OpenAt(dir, TranscriptName, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("stage: %w", err)
	}
	return f, nil
}
