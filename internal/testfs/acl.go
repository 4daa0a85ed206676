package testfs

import "encoding/binary"

// ACL is a POSIX access ACL in the kernel's binary form, the value of the
// system.posix_acl_access attribute: version 2, then one (tag, perm, id)
// entry each. Tags and ids are those of <linux/posix_acl_xattr.h>.
func ACL(entries ...[3]uint32) []byte {
	b := binary.LittleEndian.AppendUint32(nil, 2)
	for _, e := range entries {
		b = binary.LittleEndian.AppendUint16(b, uint16(e[0]))
		b = binary.LittleEndian.AppendUint16(b, uint16(e[1]))
		b = binary.LittleEndian.AppendUint32(b, e[2])
	}
	return b
}

// The tags of an ACL's entries, and the id of an entry that names no one.
const (
	ACLUserObj  = 0x01 // the file's owner
	ACLUser     = 0x02 // a user named by id
	ACLGroupObj = 0x04 // the file's group
	ACLGroup    = 0x08 // a group named by id
	ACLMask     = 0x10 // what named entries and the file's group may have at most
	ACLOther    = 0x20 // everyone else
	ACLNoID     = 0xffffffff
)
