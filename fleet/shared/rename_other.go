//go:build !linux

package shared

import "os"

// renameNoReplace is a link and an unlink: renameat2 is Linux's; macOS's
// renamex_np and FreeBSD's lack of an equivalent are not worth a path of
// their own for the hosts sessdb builds on there (sessdb runs on Linux
// and macOS, and builds on FreeBSD).
func renameNoReplace(kd *os.File, from, to string) error { return linkUnlink(kd, from, to) }
