//go:build darwin || freebsd

package main

import "golang.org/x/sys/unix"

// fsName names the filesystem holding dir by statfs's f_fstypename.
func fsName(dir string) (string, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return "", err
	}
	return unix.ByteSliceToString(st.Fstypename[:]), nil
}
