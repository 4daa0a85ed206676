package shared

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"sessdb/internal/durable"
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
			calls := 0
			disk := refusingDisk{errno: errno, calls: &calls}
			dir := t.TempDir()
			d, err := os.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			p := func(n string) string { return filepath.Join(dir, n) }
			os.WriteFile(p("tmp"), []byte("new"), 0o600)
			if err := renameNoReplace(disk, d, "tmp", "final"); err != nil || calls != 1 {
				t.Fatalf("renameNoReplace = %v (renameat2 called %d times)", err, calls)
			}
			if b, _ := os.ReadFile(p("final")); string(b) != "new" {
				t.Fatalf("final holds %q", b)
			}
			if _, err := os.Lstat(p("tmp")); !os.IsNotExist(err) {
				t.Fatalf("the temp is still there: %v", err)
			}
			os.WriteFile(p("tmp2"), []byte("other"), 0o600)
			if err := renameNoReplace(disk, d, "tmp2", "final"); !errors.Is(err, ErrExists) {
				t.Fatalf("onto an existing name = %v, want ErrExists", err)
			}
			if b, _ := os.ReadFile(p("final")); string(b) != "new" {
				t.Fatalf("the existing name now holds %q", b)
			}
			if _, err := os.Lstat(p("tmp2")); err != nil {
				t.Fatalf("the temp went: %v", err)
			}
			os.Link(p("tmp2"), p("final2"))
			if err := renameNoReplace(disk, d, "tmp2", "final2"); err != nil {
				t.Fatalf("onto its own link = %v", err)
			}
		})
	}
}

// refusingDisk is the disk of a filesystem whose atomic no-replace rename
// says errno, as the NFS and CephFS clients' do.
type refusingDisk struct {
	durable.Disk
	errno unix.Errno
	calls *int
}

func (r refusingDisk) RenameNoReplaceAtomic(*os.File, string, string) error {
	*r.calls++
	return r.errno
}
