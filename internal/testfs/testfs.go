// Package testfs makes the odd files that hostile-input tests plant, the
// same way on every system. Only tests import it.
package testfs

import "golang.org/x/sys/unix"

// MknodNull makes path a character device with the numbers of the
// system's /dev/null: a device whose open is harmless wherever the test
// runs (the numbers differ between systems). It needs privilege; callers
// skip when it fails.
func MknodNull(path string) error {
	var st unix.Stat_t
	if err := unix.Stat("/dev/null", &st); err != nil {
		return err
	}
	return mknod(path, unix.S_IFCHR|0o600, &st)
}
