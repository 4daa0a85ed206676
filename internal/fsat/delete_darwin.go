package fsat

import "golang.org/x/sys/unix"

// attrsAt reports whether dirfd's entry name ("": dirfd itself) is
// immutable or append-only (chflags: the user's or the system's flag),
// never following a link.
func attrsAt(dirfd int, name string) (immutable, appendOnly bool, err error) {
	var st unix.Stat_t
	if name == "" {
		err = unix.Fstat(dirfd, &st)
	} else {
		err = unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	}
	if err != nil {
		return false, false, err
	}
	return st.Flags&(unix.UF_IMMUTABLE|unix.SF_IMMUTABLE) != 0, st.Flags&(unix.UF_APPEND|unix.SF_APPEND) != 0, nil
}
