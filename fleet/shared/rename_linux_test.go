package shared

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// On a filesystem that refuses RENAME_NOREPLACE (the NFS and CephFS
// clients say EINVAL; older kernels ENOSYS, some FUSE EOPNOTSUPP) the
// rename is a link and an unlink: the name is taken whole, an existing
// name is never replaced (ErrExists, the file there untouched, the temp
// left for Write to remove), and a name that is already the temp's own
// inode (a retransmitted LINK) is success.
func TestNoReplaceFallsBackToLinkWhereTheFlagIsRefused(t *testing.T) {
	for _, errno := range []unix.Errno{unix.EINVAL, unix.ENOSYS, unix.EOPNOTSUPP} {
		t.Run(errno.Error(), func(t *testing.T) {
			saved := renameat2
			defer func() { renameat2 = saved }()
			calls := 0
			renameat2 = func(int, string, int, string, uint) error { calls++; return errno }
			dir := t.TempDir()
			d, err := os.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			p := func(n string) string { return filepath.Join(dir, n) }
			os.WriteFile(p("tmp"), []byte("new"), 0o600)
			if err := renameNoReplace(d, "tmp", "final"); err != nil || calls != 1 {
				t.Fatalf("renameNoReplace = %v (renameat2 called %d times)", err, calls)
			}
			if b, _ := os.ReadFile(p("final")); string(b) != "new" {
				t.Fatalf("final holds %q", b)
			}
			if _, err := os.Lstat(p("tmp")); !os.IsNotExist(err) {
				t.Fatalf("the temp is still there: %v", err)
			}
			os.WriteFile(p("tmp2"), []byte("other"), 0o600)
			if err := renameNoReplace(d, "tmp2", "final"); !errors.Is(err, ErrExists) {
				t.Fatalf("onto an existing name = %v, want ErrExists", err)
			}
			if b, _ := os.ReadFile(p("final")); string(b) != "new" {
				t.Fatalf("the existing name now holds %q", b)
			}
			if _, err := os.Lstat(p("tmp2")); err != nil {
				t.Fatalf("the temp went: %v", err)
			}
			os.Link(p("tmp2"), p("final2"))
			if err := renameNoReplace(d, "tmp2", "final2"); err != nil {
				t.Fatalf("onto its own link = %v", err)
			}
		})
	}
}
