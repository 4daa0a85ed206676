package main

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// fsName names the filesystem holding dir by statfs's magic number.
func fsName(dir string) (string, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return "", err
	}
	switch uint32(st.Type) { // int32 on 32-bit systems, where btrfs's magic is negative
	case unix.EXT4_SUPER_MAGIC:
		return "ext4", nil
	case unix.XFS_SUPER_MAGIC:
		return "xfs", nil
	case unix.BTRFS_SUPER_MAGIC:
		return "btrfs", nil
	case unix.TMPFS_MAGIC:
		return "tmpfs", nil
	case unix.OVERLAYFS_SUPER_MAGIC:
		return "overlayfs", nil
	}
	return fmt.Sprintf("magic %#x", uint32(st.Type)), nil
}
