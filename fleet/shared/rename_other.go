//go:build !linux

package shared

import (
	"os"

	"sessdb/internal/durable"
)

// renameNoReplace is a link and an unlink: renameat2 is Linux's; macOS's
// renamex_np and FreeBSD's lack of an equivalent are not worth a path of
// their own for the hosts sessdb builds on there (sessdb runs on Linux
// and macOS, and builds on FreeBSD).
func renameNoReplace(disk durable.FS, kd *os.File, from, to string) error {
	return linkUnlink(disk, kd, from, to)
}
