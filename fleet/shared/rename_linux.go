package shared

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"

	"sessdb/internal/durable"
)

// renameNoReplace renames with renameat2(RENAME_NOREPLACE), falling back
// to a link and an unlink where the filesystem lacks it.
func renameNoReplace(disk durable.FS, kd *os.File, from, to string) error {
	err := disk.RenameNoReplaceAtomic(kd, from, to)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EOPNOTSUPP):
		return linkUnlink(disk, kd, from, to) // NFS and older kernels
	}
	if le := (*os.LinkError)(nil); errors.As(err, &le) && le.Err == unix.EEXIST {
		le.Err = ErrExists
	}
	return err
}
