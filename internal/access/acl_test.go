package access

import (
	"testing"

	"golang.org/x/sys/unix"

	"sessdb/internal/testfs"
)

// The tags this package does not name itself, in testfs's names.
const userObj, none = testfs.ACLUserObj, testfs.ACLNoID

// An entry root owns, mode 0600 group 54322, judged for an owner no user
// database knows (uid 54321, group 54322: its groups are the root's, its
// gid), by its ACL as the kernel would: the entry naming the owner,
// masked; else the one group entry of its groups that gives all it needs;
// else others'. What is not an ACL leaves the mode's judgement.
func TestJudgeACL(t *testing.T) {
	owner := &Owner{UID: 54321, GID: 54322}
	st := &unix.Stat_t{Uid: 0, Gid: 54322, Mode: unix.S_IFREG | 0o600}
	base := [][3]uint32{{userObj, 6, none}, {aclOther, 0, none}}
	with := func(more ...[3]uint32) []byte { return testfs.ACL(append(append([][3]uint32{}, base...), more...)...) }
	for _, c := range []struct {
		name  string
		acl   []byte
		need  uint32
		lacks uint32
		ok    bool
	}{
		{"the owner named, rw", with([3]uint32{aclUser, 6, 54321}, [3]uint32{aclGroupObj, 0, none}, [3]uint32{aclMask, 7, none}), 0o600, 0, true},
		{"the owner named, rw, masked to r", with([3]uint32{aclUser, 6, 54321}, [3]uint32{aclGroupObj, 0, none}, [3]uint32{aclMask, 4, none}), 0o600, 0o200, true},
		{"another user named", with([3]uint32{aclUser, 7, 1000}, [3]uint32{aclGroupObj, 0, none}, [3]uint32{aclMask, 7, none}), 0o600, 0o600, true},
		{"the owner named with nothing, its group rw", with([3]uint32{aclUser, 0, 54321}, [3]uint32{aclGroupObj, 6, none}, [3]uint32{aclMask, 7, none}), 0o600, 0o600, true},
		{"the file's group, the owner's, rw", with([3]uint32{aclGroupObj, 6, none}), 0o600, 0, true},
		{"a named group of the owner's, rwx, the file's group nothing", with([3]uint32{aclGroupObj, 0, none}, [3]uint32{aclGroup, 7, 54322}, [3]uint32{aclMask, 7, none}), 0o700, 0, true},
		{"two group entries, r and w, neither rw", with([3]uint32{aclGroupObj, 4, none}, [3]uint32{aclGroup, 2, 54322}, [3]uint32{aclMask, 7, none}), 0o600, 0o200, true},
		{"a named group not the owner's", with([3]uint32{aclGroupObj, 0, none}, [3]uint32{aclGroup, 7, 999}, [3]uint32{aclMask, 7, none}), 0o600, 0o600, true},
		{"others r", testfs.ACL([3]uint32{userObj, 6, none}, [3]uint32{aclOther, 4, none}), 0o400, 0, true},
		{"a version this does not read", append([]byte{1, 0, 0, 0}, with()[4:]...), 0o600, 0, false},
		{"a torn entry", with()[:9], 0o600, 0, false},
	} {
		st := *st
		if c.name == "others r" {
			st.Gid = 999 // not the owner's group: others decide
		}
		lacks, ok := JudgeACL(c.acl, &st, c.need, owner)
		if lacks != c.lacks || ok != c.ok {
			t.Errorf("%s: lacks %04o, ok %v; want %04o, %v", c.name, lacks, ok, c.lacks, c.ok)
		}
	}
}
