package access

import (
	"encoding/binary"
	"math/bits"
	"os"

	"golang.org/x/sys/unix"

	"sessdb/internal/fsat"
)

// The tags of a POSIX ACL's entries in the kernel's binary form
// (linux/posix_acl_xattr.h): a little-endian version, 2, then entries of
// a 16-bit tag, a 16-bit perm (rwx as 4, 2, 1) and a 32-bit id.
const (
	aclVersion  = 2
	aclUser     = 0x02
	aclGroupObj = 0x04
	aclGroup    = 0x08
	aclMask     = 0x10
	aclOther    = 0x20
)

// JudgeAt is Judge of dir's entry at path (one name, or a name in a
// directory named in dir) whose lstat is st, with the access ACL
// (fsat.AccessACL) of an entry root owns in another user's store read
// and judged in place of the mode's group and others' bits: an entry
// that names the owner, or a group of its, can give what those bits do
// not (a key shared with a worker by `setfacl -m u:worker:rwx`), or take
// what they seem to give (`u:worker:r--` on a file 0666: the group bits
// are then the ACL's mask). Such entries are rare (what an older sessdb
// made as root), so the read costs nothing the common walk pays. An ACL
// that cannot be read leaves the mode bits' judgement.
func JudgeAt(dir *os.File, path string, st *unix.Stat_t, need uint32, owner *Owner) (modeLacks, ownerLacks uint32) {
	modeLacks, ownerLacks = Judge(st, need, owner)
	if owner == nil || owner.UID == 0 || st.Uid != 0 {
		return modeLacks, ownerLacks // Judge's owner cases: root's entry in another's store only
	}
	acl, err := fsat.AccessACL(dir, path, st)
	if err != nil || acl == nil {
		return modeLacks, ownerLacks
	}
	if lacks, ok := JudgeACL(acl, st, need, owner); ok {
		return modeLacks, lacks
	}
	return modeLacks, ownerLacks
}

// JudgeACL is Judge's ownerLacks for an entry root owns (st its lstat)
// whose access ACL is acl, by the kernel's rule for a user who does not
// own the file: the entry naming the user, masked; else the group entries
// (the file's group's and named groups') of groups it is in, one of which
// must give all it needs, each masked; else others'. ok is false where
// acl is not an ACL in the form this reads, or names no entry that
// decides (the mode bits then stand).
func JudgeACL(acl []byte, st *unix.Stat_t, need uint32, owner *Owner) (lacks uint32, ok bool) {
	if len(acl) < 4 || (len(acl)-4)%8 != 0 || binary.LittleEndian.Uint32(acl) != aclVersion {
		return 0, false
	}
	mask := uint32(7)
	var user, other *uint32
	var groups []uint32
	for i := 4; i < len(acl); i += 8 {
		tag := binary.LittleEndian.Uint16(acl[i:])
		perm := uint32(binary.LittleEndian.Uint16(acl[i+2:])) & 7
		id := binary.LittleEndian.Uint32(acl[i+4:])
		switch {
		case tag == aclMask:
			mask = perm
		case tag == aclUser && id == owner.UID:
			user = &perm
		case tag == aclGroupObj && owner.inGroup(st.Gid), tag == aclGroup && owner.inGroup(id):
			groups = append(groups, perm)
		case tag == aclOther:
			other = &perm
		}
	}
	// lacking is what of need perm, in the owner's place, does not give.
	lacking := func(perm uint32) uint32 { return need &^ (perm << 6) }
	switch {
	case user != nil:
		return lacking(*user & mask), true
	case len(groups) > 0:
		best := need
		for _, g := range groups {
			if l := lacking(g & mask); bits.OnesCount32(l) < bits.OnesCount32(best) {
				best = l
			}
		}
		return best, true
	case other != nil:
		return lacking(*other), true
	}
	return 0, false
}
