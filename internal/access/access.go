// Package access judges whether the user a store is made for may use
// what the store keeps: the owner's bits an entry of its own lacks
// (check's kind mode, which --repair gives back, GiveBits), and an entry
// another user owns that it may not use through the mode's group or
// others' bits (kind owner, left to the operator: a worker can put
// another user's file at a key's name, and check cannot tell it from one
// sessdb made). A sessions root, and a fleet's transcripts dir, belong to
// one user, their owner: sessdb makes every directory 0700 and every file
// 0600, and, run as root on Linux, makes what it makes the owner's of the
// directory it makes it in (package fsat). What an older sessdb made
// under a umask that took the owner's bits, or as root, is what check
// finds with this package.
package access

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"sessdb/internal/fsat"
)

// Owner is the user and group a store is made for: its root's owner.
type Owner struct{ UID, GID uint32 }

// OwnerOf returns the owner of dir, the store's root, open; false when
// it cannot be told (no owner is then judged).
func OwnerOf(dir *os.File) (Owner, bool) {
	var st unix.Stat_t
	if _, err := fsat.IgnoringEINTR(func() (struct{}, error) { return struct{}{}, unix.Fstat(int(dir.Fd()), &st) }); err != nil {
		return Owner{}, false
	}
	return Owner{st.Uid, st.Gid}, true
}

// DirLacks returns the mode of dir, a store's root open (a sessions root,
// a transcripts dir), and the owner's bits of need it lacks, judged for
// its own owner as Judge does (root's: none); ok false when its mode
// cannot be read (the walk reports that).
func DirLacks(dir *os.File, need uint32) (mode, lacks uint32, ok bool) {
	var st unix.Stat_t
	if _, err := fsat.IgnoringEINTR(func() (struct{}, error) { return struct{}{}, unix.Fstat(int(dir.Fd()), &st) }); err != nil {
		return 0, 0, false
	}
	lacks, _ = Judge(&st, need, &Owner{st.Uid, st.Gid})
	return uint32(st.Mode) & 0o7777, lacks, true
}

// Judge says what owner, the user the store is made for, may not do with
// an entry (st its lstat) of which the store needs the bits need (0o700
// at most), in the owner's place, as Verbs takes them: modeLacks, the
// bits of an entry of owner's own that its mode lacks; ownerLacks, the
// bits of an entry root owns that owner lacks through the mode's group
// bits (owner being in the entry's group: its own groups, looked up, else
// the root's) or its others' bits. Root is the one other user sessdb ever
// made an entry as: another user's entry (a store its owner shares with
// a group's workers) is theirs to judge, and is not judged. Root may use
// anything: a store root owns judges nothing, and neither does an entry
// root owns where the owner is not known (nil: the entry's own owner
// bits judged, as of a store made for whoever owns it).
func Judge(st *unix.Stat_t, need uint32, owner *Owner) (modeLacks, ownerLacks uint32) {
	mode := uint32(st.Mode) & 0o777
	switch {
	case owner == nil && st.Uid == 0, owner != nil && owner.UID == 0:
		return 0, 0
	case owner == nil || st.Uid == owner.UID:
		return need &^ mode, 0
	case st.Uid != 0:
		return 0, 0
	}
	has := (mode & 0o7) << 6
	if owner.inGroup(st.Gid) {
		has = (mode & 0o70) << 3
	}
	return 0, need &^ has
}

// inGroup reports whether owner is in group gid: its primary and
// supplementary groups as the system's user database gives them (asked
// only of an entry another user owns, which is rare), or, where the user
// cannot be looked up (a container's uid with no passwd entry), the
// group of the root.
func (o *Owner) inGroup(gid uint32) bool {
	u, err := user.LookupId(strconv.FormatUint(uint64(o.UID), 10))
	if err != nil {
		return gid == o.GID
	}
	ids, err := u.GroupIds()
	if err != nil {
		ids = []string{u.Gid}
	}
	return slices.Contains(ids, strconv.FormatUint(uint64(gid), 10))
}

// OwnerAdvice is what check --repair says of an entry another user owns,
// which it leaves: the root's owner can rename into the store a file
// another user owns (root's, or a third user's from a directory anyone
// may write), which check cannot tell from one sessdb made as root, and
// giving it away would hand it over.
const OwnerAdvice = "check --repair gives no file away (the root's owner can put another user's file at a store's name): once you know it is the store's, give it to the root's owner as root (chown; chown -R for a key dir)"

// Verbs names what bits (in the owner's place) let one do: "read",
// "write", "execute" (for a directory, "enter"), as a list ending in
// "or".
func Verbs(bits uint32, dir bool) string {
	var verbs []string
	for _, b := range []struct {
		bit  uint32
		verb string
	}{{0o400, "read"}, {0o200, "write"}, {0o100, "execute"}} {
		if bits&b.bit != 0 {
			verb := b.verb
			if dir && b.bit == 0o100 {
				verb = "enter"
			}
			verbs = append(verbs, verb)
		}
	}
	if len(verbs) > 1 {
		return strings.Join(verbs[:len(verbs)-1], ", ") + " or " + verbs[len(verbs)-1]
	}
	return strings.Join(verbs, "")
}

// GiveBits gives dir's entry name, uid's (-1: whoever's), the owner's
// bits of need its mode lacks (fsat.AddOwnerBitsAt: on the one inode it
// opened without following a link; "." with dir itself the entry:
// fsat.AddOwnerBits), through m (the durability seam: the chmod, then the
// fsync of the inode that makes it durable before it is said done), and
// says what it did, or, done false, why it did nothing: the entry gone or
// replaced since it was found, or its mode right now. An error is a
// repair that failed.
func GiveBits(m fsat.Moder, dir *os.File, name string, need uint32, uid int) (outcome string, done bool, err error) {
	var before uint32
	if name == "." {
		before, err = fsat.AddOwnerBits(m, dir, need)
	} else {
		before, err = fsat.AddOwnerBitsAt(m, dir, name, need, uid)
	}
	switch {
	case fsat.IsNotExist(err):
		return "gone since it was found: nothing left to give bits to", false, nil
	case errors.Is(err, fsat.ErrNotTheOne):
		return "gone since it was found: what is at its name now is not the owner's directory or file, and is left as it is", false, nil
	case err != nil:
		return "", false, err
	case before&need == need:
		return fmt.Sprintf("gone since it was found: its mode is %04o now", before), false, nil
	}
	return fmt.Sprintf("gave its owner the bits it lacked: mode %04o, now %04o", before, before|need), true, nil
}

// OpenToAnyone reports whether st, a directory's, lets anyone rename or
// replace its entries: writable by others (o+w) without the sticky bit,
// as the walks judge a sessions root or a transcripts dir.
func OpenToAnyone(st *unix.Stat_t) bool {
	return st.Mode&unix.S_IFMT == unix.S_IFDIR && st.Mode&0o002 != 0 && st.Mode&unix.S_ISVTX == 0
}

// MendKeyDir is GiveBits for a key dir, name in dir, that also takes the
// others' write bit away where anyone may write in it (OpenToAnyone):
// sessdb makes a key dir 0700, and any user of the host could replace
// its meta.db or transcript. One chmod, never through a link, only of
// the owner uid's directory.
func MendKeyDir(m fsat.Moder, dir *os.File, name string, need uint32, uid int) (outcome string, done bool, err error) {
	before, err := fsat.MendDirModeAt(m, dir, name, need, 0o002, uid)
	switch {
	case fsat.IsNotExist(err):
		return "gone since it was found: nothing left to give bits to", false, nil
	case errors.Is(err, fsat.ErrNotTheOne) && uid >= 0:
		// Another user's directory at the key dir's name (root's, made
		// by a job run as root; or one swapped in since the walk: the
		// two look alike here) is not changed: say whose it is, not
		// that the key dir went.
		var st unix.Stat_t
		if unix.Fstatat(int(dir.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && fsat.IsDir(&st) && st.Uid != uint32(uid) {
			hint := ""
			if st.Mode&0o002 != 0 && st.Mode&unix.S_ISVTX == 0 {
				hint = " (its owner or root may take the others' write bit: chmod o-w)"
			}
			return fmt.Sprintf("left as it is: what is at its name now is not the owner's directory or file, but a directory of uid %d's, not uid %d's, whose modes alone --repair changes%s", st.Uid, uid, hint), false, nil
		}
		return "gone since it was found: what is at its name now is not the owner's directory or file, and is left as it is", false, nil
	case errors.Is(err, fsat.ErrNotTheOne):
		return "gone since it was found: what is at its name now is not the owner's directory or file, and is left as it is", false, nil
	case err != nil:
		return "", false, err
	}
	drop := uint32(0o002)
	if before&unix.S_ISVTX != 0 {
		drop = 0 // as MendDirModeAt: a sticky dir keeps it
	}
	if before&need == need && before&drop == 0 {
		return fmt.Sprintf("gone since it was found: its mode is %04o now", before), false, nil
	}
	did := "took the others' write bit"
	switch {
	case before&need != need && before&drop != 0:
		did = "gave its owner the bits it lacked and took the others' write bit"
	case before&need != need:
		did = "gave its owner the bits it lacked"
	}
	return fmt.Sprintf("%s: mode %04o, now %04o", did, before, (before|need)&^drop), true, nil
}
