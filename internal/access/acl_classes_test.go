package access

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"sessdb/internal/testfs"
)

// JudgeACL judges each class as the kernel does for a user who does not
// own the file (the owner uid 54321, no user database entry: its groups
// are its gid, 54322): the file's group entry only where the file's
// group is the owner's; a named group's entry through the mask; others'
// entry not through it; and an ACL with no entry that decides leaves the
// mode bits' judgement (ok false), not a pass.
func TestJudgeACLAsTheKernelForEachClass(t *testing.T) {
	owner := &Owner{UID: 54321, GID: 54322}
	for _, c := range []struct {
		name  string
		gid   uint32
		acl   []byte
		need  uint32
		lacks uint32
		ok    bool
	}{
		{"the file's group rw, not the owner's group; others r", 999,
			testfs.ACL([3]uint32{userObj, 6, none}, [3]uint32{aclGroupObj, 6, none}, [3]uint32{aclOther, 4, none}), 0o600, 0o200, true},
		{"a named group of the owner's rw, masked to r", 999,
			testfs.ACL([3]uint32{userObj, 6, none}, [3]uint32{aclGroupObj, 0, none}, [3]uint32{aclGroup, 6, 54322}, [3]uint32{aclMask, 4, none}, [3]uint32{aclOther, 0, none}), 0o600, 0o200, true},
		{"others r, the mask nothing (others are not masked)", 999,
			testfs.ACL([3]uint32{userObj, 6, none}, [3]uint32{aclGroupObj, 0, none}, [3]uint32{aclMask, 0, none}, [3]uint32{aclOther, 4, none}), 0o400, 0, true},
		{"no entry that decides: the owning user's alone", 999,
			testfs.ACL([3]uint32{userObj, 6, none}), 0o600, 0, false},
	} {
		st := &unix.Stat_t{Uid: 0, Gid: c.gid, Mode: unix.S_IFREG | 0o600}
		if lacks, ok := JudgeACL(c.acl, st, c.need, owner); lacks != c.lacks || ok != c.ok {
			t.Errorf("%s: lacks %04o, ok %v; want %04o, %v", c.name, lacks, ok, c.lacks, c.ok)
		}
	}
}

// aclFile is a file in a new directory, open, whose access ACL gives its
// owning user rw and its group, the mask and others nothing (mode 0600),
// and its lstat; it skips where the file system keeps no ACL.
func aclFile(t *testing.T) (*os.File, string, *unix.Stat_t) {
	t.Helper()
	p := t.TempDir()
	if err := os.WriteFile(filepath.Join(p, "meta.db"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	acl := testfs.ACL([3]uint32{userObj, 6, none}, [3]uint32{aclGroupObj, 0, none}, [3]uint32{aclMask, 0, none}, [3]uint32{aclOther, 0, none})
	if err := unix.Setxattr(filepath.Join(p, "meta.db"), "system.posix_acl_access", acl, 0); err != nil {
		t.Skipf("no access ACL on this file system (%v): not tested", err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join(p, "meta.db"), &st); err != nil {
		t.Fatal(err)
	}
	dir, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dir.Close() })
	return dir, "meta.db", &st
}

// JudgeAt reads the ACL of root's entry in another user's store only: for
// an owner not known (nil) it is Judge (and does not fail), in root's own
// store it judges nothing (root may use anything), and the owner's own
// entry is judged by its mode's owner bits, which the kernel reads in
// place of any ACL for the file's owner. Each entry here has an ACL that
// gives all but its owning user nothing. (The lstat's owner is set to
// the case's: JudgeAt reads the ACL of the inode the lstat names.)
func TestJudgeAtReadsTheACLOfRootsEntryInAnothersStoreOnly(t *testing.T) {
	dir, name, st := aclFile(t)
	for _, c := range []struct {
		name     string
		uid, gid uint32
		owner    *Owner
	}{
		{"an owner not known, root's entry", 0, 0, nil},
		{"root's own store, root's entry", 0, 0, &Owner{UID: 0, GID: 0}},
		{"the owner's own entry, its group the owner's", 54321, 54322, &Owner{UID: 54321, GID: 54322}},
	} {
		st := *st
		st.Uid, st.Gid = c.uid, c.gid
		wantMode, wantOwner := Judge(&st, 0o600, c.owner)
		modeLacks, ownerLacks := JudgeAt(dir, name, &st, 0o600, c.owner)
		if modeLacks != wantMode || ownerLacks != wantOwner || ownerLacks != 0 {
			t.Errorf("%s: JudgeAt = %04o, %04o; want Judge's, %04o, %04o, and no owner finding", c.name, modeLacks, ownerLacks, wantMode, wantOwner)
		}
	}
}
