package fsat

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// AccessACL reads the access ACL of a name, or of a name in a directory
// named, in dir: what was set, byte for byte; nil for a file with none,
// and nil where what is at the name is no longer the file the caller
// looked at (another inode, or a link to the file), never followed.
func TestAccessACL(t *testing.T) {
	d, p := tempDir(t)
	must(t, os.Mkdir(filepath.Join(p, "key"), 0o700))
	for _, name := range []string{"key/file", "plain", "other"} {
		must(t, os.WriteFile(filepath.Join(p, name), nil, 0o600))
	}
	must(t, os.Symlink("key/file", filepath.Join(p, "link")))
	// root rw, uid 65534 r, the group nothing, the mask r, others nothing.
	acl := []byte{2, 0, 0, 0}
	for _, e := range [][8]byte{{1, 0, 6, 0, 0xff, 0xff, 0xff, 0xff}, {2, 0, 4, 0, 0xfe, 0xff, 0, 0}, {4, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}, {0x10, 0, 4, 0, 0xff, 0xff, 0xff, 0xff}, {0x20, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}} {
		acl = append(acl, e[:]...)
	}
	if err := unix.Setxattr(filepath.Join(p, "key/file"), "system.posix_acl_access", acl, 0); err != nil {
		t.Skipf("no access ACL on this file system (%v): not tested", err)
	}
	lstat := func(name string) *unix.Stat_t {
		var st unix.Stat_t
		must(t, unix.Lstat(filepath.Join(p, name), &st))
		return &st
	}
	if got, err := AccessACL(d, "key/file", lstat("key/file")); err != nil || !bytes.Equal(got, acl) {
		t.Errorf("AccessACL of key/file = %v, %v; want the ACL set, %v", got, err, acl)
	}
	if got, err := AccessACL(d, "plain", lstat("plain")); err != nil || got != nil {
		t.Errorf("AccessACL of a file with none = %v, %v; want nil", got, err)
	}
	if got, err := AccessACL(d, "other", lstat("key/file")); err != nil || got != nil {
		t.Errorf("AccessACL of another file than the one looked at = %v, %v; want nil", got, err)
	}
	if got, err := AccessACL(d, "link", lstat("key/file")); err != nil || got != nil {
		t.Errorf("AccessACL through a link to the file = %v, %v; want nil, the link not followed", got, err)
	}
}
