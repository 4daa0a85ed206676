package shared

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// A generation and its key dir are the worker's alone whatever the
// process's umask: 0600 and 0700, under a umask that takes the owner's
// own bits too (0777 made them mode 0, which a worker that is not root
// cannot open again), and the generation reads back.
func TestWriteKeepsItsModesWhateverTheUmask(t *testing.T) {
	for _, mask := range []int{0, 0o777} {
		dir := t.TempDir()
		old := syscall.Umask(mask)
		name := write(t, dir, []byte("x\n"))
		syscall.Umask(old)
		for p, want := range map[string]os.FileMode{
			filepath.Join(dir, key):  0o700,
			filepath.Join(dir, name): 0o600,
		} {
			fi, err := os.Lstat(p)
			if err != nil {
				t.Fatalf("umask %03o: %v", mask, err)
			}
			if fi.Mode().Perm() != want {
				t.Errorf("umask %03o: %s: mode %v, want %v", mask, p, fi.Mode().Perm(), want)
			}
		}
		f, err := Open(dir, name)
		if err != nil {
			t.Fatalf("umask %03o: %v", mask, err)
		}
		f.Close()
	}
}
