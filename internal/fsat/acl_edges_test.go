package fsat

import (
	"bytes"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/internal/testfs"
)

// accessACLOf is an access ACL in the kernel's binary form: root's user
// entry rw, users 1000 to 1000+users-1 named r, the group nothing, the
// mask r, others nothing.
func accessACLOf(users int) []byte {
	entries := [][3]uint32{{testfs.ACLUserObj, 6, testfs.ACLNoID}}
	for i := range users {
		entries = append(entries, [3]uint32{testfs.ACLUser, 4, uint32(1000 + i)})
	}
	entries = append(entries, [3]uint32{testfs.ACLGroupObj, 0, testfs.ACLNoID}, [3]uint32{testfs.ACLMask, 4, testfs.ACLNoID}, [3]uint32{testfs.ACLOther, 0, testfs.ACLNoID})
	return testfs.ACL(entries...)
}

// AccessACL reads no ACL of a file other than the one the caller looked
// at: not one at the name with another inode (on the same device), nor
// the same inode number on another device. Here the file at the name
// has an ACL, so a read of it would show.
func TestAccessACLOfAnotherInodeOrDeviceIsNil(t *testing.T) {
	d, p := tempDir(t)
	for _, name := range []string{"with", "plain"} {
		must(t, os.WriteFile(filepath.Join(p, name), nil, 0o600))
	}
	if err := unix.Setxattr(filepath.Join(p, "with"), "system.posix_acl_access", accessACLOf(1), 0); err != nil {
		t.Skipf("no access ACL on this file system (%v): not tested", err)
	}
	var with, plain unix.Stat_t
	must(t, unix.Lstat(filepath.Join(p, "with"), &with))
	must(t, unix.Lstat(filepath.Join(p, "plain"), &plain))
	if got, err := AccessACL(d, "with", &with); err != nil || got == nil {
		t.Fatalf("AccessACL of the file looked at = %v, %v; want its ACL (else this test tests nothing)", got, err)
	}
	if got, err := AccessACL(d, "with", &plain); err != nil || got != nil {
		t.Errorf("AccessACL where the look found another inode = %v, %v; want nil", got, err)
	}
	elsewhere := with
	elsewhere.Dev++
	if got, err := AccessACL(d, "with", &elsewhere); err != nil || got != nil {
		t.Errorf("AccessACL where the look found that inode number on another device = %v, %v; want nil", got, err)
	}
}

// A file system that keeps no extended attributes (proc) answers the
// read with EOPNOTSUPP: that file has no ACL (nil), which is no error.
func TestAccessACLWhereTheFileSystemKeepsNoneIsNil(t *testing.T) {
	proc, err := os.Open("/proc/self")
	if err != nil {
		t.Skipf("no /proc here (%v)", err)
	}
	defer proc.Close()
	var st unix.Stat_t
	must(t, unix.Fstatat(int(proc.Fd()), "status", &st, unix.AT_SYMLINK_NOFOLLOW))
	if _, err := unix.Getxattr("/proc/self/status", "system.posix_acl_access", nil); err != unix.EOPNOTSUPP {
		t.Skipf("proc here answers %v, not EOPNOTSUPP: not tested", err)
	}
	if got, err := AccessACL(proc, "status", &st); err != nil || got != nil {
		t.Errorf("AccessACL of a file on proc = %v, %v; want nil, no error", got, err)
	}
}

// An ACL that grows or shrinks between AccessACL's question of its size
// and its read is read again, whole: never an error (ERANGE), never the
// shorter ACL with the longer one's room after it.
func TestAccessACLChangedWhileReadIsReadWhole(t *testing.T) {
	d, p := tempDir(t)
	name := filepath.Join(p, "file")
	must(t, os.WriteFile(name, nil, 0o600))
	small, large := accessACLOf(1), accessACLOf(24)
	if err := unix.Setxattr(name, "system.posix_acl_access", small, 0); err != nil {
		t.Skipf("no access ACL on this file system (%v): not tested", err)
	}
	var st unix.Stat_t
	must(t, unix.Lstat(name, &st))
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; !stop.Load(); i++ {
			acl := small
			if i%2 == 1 {
				acl = large
			}
			unix.Setxattr(name, "system.posix_acl_access", acl, 0)
		}
	}()
	defer func() { stop.Store(true); <-done }()
	for end := time.Now().Add(700 * time.Millisecond); time.Now().Before(end); {
		got, err := AccessACL(d, "file", &st)
		if err != nil || !bytes.Equal(got, small) && !bytes.Equal(got, large) {
			t.Fatalf("AccessACL of an ACL set again and again = %d bytes, %v; want the one or the other, %d or %d bytes, whole", len(got), err, len(small), len(large))
		}
	}
}
