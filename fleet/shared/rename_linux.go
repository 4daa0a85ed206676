package shared

import (
	"os"

	"golang.org/x/sys/unix"

	"sessdb/internal/fsat"
)

// renameNoReplace renames with renameat2(RENAME_NOREPLACE), falling back
// to a link and an unlink where the filesystem lacks it.
func renameNoReplace(kd *os.File, from, to string) error {
	err := renameat2(int(kd.Fd()), from, int(kd.Fd()), to, unix.RENAME_NOREPLACE)
	switch err {
	case nil:
		return nil
	case unix.EINVAL, unix.ENOSYS, unix.EOPNOTSUPP:
		return linkUnlink(kd, from, to) // NFS and older kernels
	case unix.EEXIST:
		err = ErrExists
	}
	return &os.LinkError{Op: "rename", Old: fsat.Join(kd, from), New: fsat.Join(kd, to), Err: err}
}

// renameat2 is the system call; a variable so that a test can stand in
// for a filesystem that refuses its flags (NFS, CephFS: EINVAL).
var renameat2 = unix.Renameat2
