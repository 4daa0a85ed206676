package testfs

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// SmallBtrfs mounts a new btrfs of size bytes, made in an image file in
// a temp dir of t's and loop-mounted, and returns its mount point,
// unmounted when t ends. On a copy-on-write file system a full disk
// refuses the rewrite of a file's own blocks too, so every bbolt commit,
// where tmpfs (SmallFS) and ext4 take one into the file's free pages. It
// needs mkfs.btrfs (Debian's btrfs-progs), mount(8) with loop devices
// and root; where one is missing t is skipped, saying which, unless
// BtrfsEnv is set.
func SmallBtrfs(t testing.TB, size int64) string {
	t.Helper()
	unavailable := t.Skipf
	if os.Getenv(BtrfsEnv) != "" {
		unavailable = t.Fatalf
	}
	mkfs, err := lookSbin("mkfs.btrfs")
	if err != nil {
		unavailable("no btrfs here: %v (Debian: apt-get install btrfs-progs)", err)
	}
	if os.Geteuid() != 0 {
		unavailable("a loop mount needs root")
	}
	dir := t.TempDir()
	img, mnt := filepath.Join(dir, "btrfs.img"), filepath.Join(dir, "mnt")
	if err := os.Mkdir(mnt, 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(img)
	if err == nil {
		err = errors.Join(f.Truncate(size), f.Close())
	}
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(mkfs, "-q", img).CombinedOutput(); err != nil {
		unavailable("mkfs.btrfs: %v: %s", err, strings.TrimSpace(string(out)))
	}
	if out, err := exec.Command("mount", "-o", "loop", img, mnt).CombinedOutput(); err != nil {
		unavailable("mount -o loop (a btrfs image): %v: %s", err, strings.TrimSpace(string(out)))
	}
	// The loop device goes with the last reference to the mount (mount
	// sets it to clear itself).
	t.Cleanup(func() { unix.Unmount(mnt, unix.MNT_DETACH) })
	return mnt
}

// lookSbin finds a system tool on PATH or in the sbin dirs a user's PATH
// may lack.
func lookSbin(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, dir := range []string{"/usr/sbin", "/sbin"} {
		if p := filepath.Join(dir, name); unix.Access(p, unix.X_OK) == nil {
			return p, nil
		}
	}
	return exec.LookPath(name)
}
