package db

import "golang.org/x/sys/unix"

// mayChownAny reports whether this process may give a file any owner and
// group: it holds CAP_CHOWN in its effective set (root, unless dropped).
// A capability that cannot be read is judged by the effective uid.
func mayChownAny() bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData // version 3 writes two
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return unix.Geteuid() == 0
	}
	return data[0].Effective&(1<<unix.CAP_CHOWN) != 0
}
