package fsat

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// DeleteErr, run as root (whom no mode refuses), tells each refusal of
// the kernel's that is not a mode's, as the unlink meets it: a dir
// append-only (chattr +a: no entry of it may go, whatever the entry's own
// attributes), an entry append-only or immutable, each EPERM naming
// which; and nothing where the unlink succeeds: an entry of another user
// in another user's sticky dir (root's CAP_FOWNER), a plain entry, a name
// that is not there. DeleteRefused, which skips the dir's mode, says the
// same of the attributes. Each answer is checked against the unlink
// itself. No test set a dir's append-only bit, an entry's append-only
// bit alone, or root's sticky exemption (mutnew47's F10, F11, F13,
// F16, L07): a dry run would have said a reap removes what its run
// fails, or refused what its run removes.
func TestDeleteErrTellsTheAttributesAndTheStickyRuleAsTheUnlinkMeetsThem(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("root is needed to set the attributes and to own another's files")
	}
	chattr := func(flag, p string) {
		t.Helper()
		if out, err := exec.Command("chattr", flag, p).CombinedOutput(); err != nil {
			t.Skipf("chattr %s %s: %v: %s (ext4, xfs or btrfs is needed)", flag, p, err, out)
		}
	}
	base := t.TempDir()
	t.Cleanup(func() { exec.Command("chattr", "-R", "-i", "-a", base).Run() })
	mk := func(dir string, mode os.FileMode, uid int, files ...string) string {
		t.Helper()
		d := filepath.Join(base, dir)
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if err := os.WriteFile(filepath.Join(d, f), nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Lchown(filepath.Join(d, f), uid, uid); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chown(d, uid, uid); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, mode); err != nil {
			t.Fatal(err)
		}
		return d
	}
	appendDir := mk("append-dir", 0o700, 0, "f")
	chattr("+a", appendDir)
	attrs := mk("attrs", 0o700, 0, "append", "immutable", "plain")
	chattr("+a", filepath.Join(attrs, "append"))
	chattr("+i", filepath.Join(attrs, "immutable"))
	sticky := mk("sticky", 0o777|os.ModeSticky, 65534, "theirs")
	for _, tc := range []struct {
		dir, name string
		why       string // "" for no refusal
	}{
		{appendDir, "f", "the dir it is in is append-only (lsattr; chattr -a, as root)"},
		{attrs, "append", "it is immutable or append-only (lsattr; chattr -i -a, as root)"},
		{attrs, "immutable", "it is immutable or append-only (lsattr; chattr -i -a, as root)"},
		{attrs, "plain", ""},
		{attrs, "absent", ""},
		{sticky, "theirs", ""},
	} {
		d, err := OpenDir(tc.dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range []struct {
			name string
			fn   func(*os.File, string) error
		}{{"DeleteErr", DeleteErr}, {"DeleteRefused", DeleteRefused}} {
			err := f.fn(d, tc.name)
			if tc.why == "" && err != nil || tc.why != "" && (!errors.Is(err, unix.EPERM) || !strings.Contains(err.Error(), tc.why)) {
				t.Errorf("%s(%s, %s) = %v; want %q", f.name, filepath.Base(tc.dir), tc.name, err, tc.why)
			}
		}
		d.Close()
		// The unlink agrees.
		err = unix.Unlink(filepath.Join(tc.dir, tc.name))
		if tc.why == "" && err != nil && !errors.Is(err, unix.ENOENT) || tc.why != "" && !errors.Is(err, unix.EPERM) {
			t.Errorf("unlink of %s in %s: %v; want %q", tc.name, filepath.Base(tc.dir), err, tc.why)
		}
	}
}
