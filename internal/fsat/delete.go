package fsat

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// DeleteErr is the error an unlink, an rmdir or a rename away of dir's
// entry name would meet for want of leave, found without changing
// anything: the refusal AccessAt gives to write in and enter dir (its
// mode, an ACL, a read-only mount; an immutable dir, EPERM naming the
// attribute); EPERM for dir append-only, or the entry immutable or
// append-only (chattr +i, +a; chflags: even root is refused); and EPERM
// for an entry of a sticky dir that neither this process's effective user
// nor the dir's owner owns (root's CAP_FOWNER taken for had). Nothing at
// the name is nil, as a removal finds it done. What it cannot tell is
// AccessAt's (an ACL or a rule a file system checks only on the server),
// and the attributes off Linux and macOS.
func DeleteErr(dir *os.File, name string) error {
	if _, err := LstatAt(dir, name); IsNotExist(err) {
		return nil
	} else if err != nil {
		return err
	}
	if err := AccessAt(dir, ".", unix.W_OK|unix.X_OK); err != nil {
		// An immutable dir refuses the write before any bit is asked
		// (EPERM, the kernel's words alone): named, as an entry's
		// attribute is.
		if errors.Is(err, unix.EPERM) {
			if why := DeleteRefused(dir, name); errors.Is(why, unix.EPERM) {
				return why
			}
		}
		return err
	}
	return DeleteRefused(dir, name)
}

// DeleteRefused is DeleteErr but for the dir's mode: what refuses the
// removal of name once its runner may write in dir (the attributes, the
// sticky rule). A caller that will give itself the bits first asks it.
func DeleteRefused(dir *os.File, name string) error {
	st, err := LstatAt(dir, name)
	if IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	refused := func(why string) error {
		return &os.PathError{Op: "remove", Path: Join(dir, name), Err: &deleteRefused{why}}
	}
	if immutable, appendOnly, err := attrsAt(int(dir.Fd()), ""); err != nil {
		return &os.PathError{Op: "stat", Path: dir.Name(), Err: err}
	} else if immutable {
		return refused("the dir it is in is immutable (lsattr; chattr -i, as root)")
	} else if appendOnly {
		return refused("the dir it is in is append-only (lsattr; chattr -a, as root)")
	}
	if immutable, appendOnly, err := attrsAt(int(dir.Fd()), name); err != nil {
		return &os.PathError{Op: "stat", Path: Join(dir, name), Err: err}
	} else if immutable || appendOnly {
		return refused("it is immutable or append-only (lsattr; chattr -i -a, as root)")
	}
	dst, err := Fstat(dir)
	if err != nil {
		return err
	}
	if euid := uint32(os.Geteuid()); dst.Mode&unix.S_ISVTX != 0 && euid != 0 && st.Uid != euid && dst.Uid != euid {
		return refused(fmt.Sprintf("the dir it is in is sticky, and uid %d owns neither it (uid %d's) nor the dir (uid %d's)", euid, st.Uid, dst.Uid))
	}
	return nil
}

// deleteRefused is DeleteErr's EPERM, with why.
type deleteRefused struct{ why string }

func (e *deleteRefused) Error() string        { return "operation not permitted: " + e.why }
func (e *deleteRefused) Is(target error) bool { return target == unix.EPERM }
