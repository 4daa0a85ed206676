package db

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// A meta.db a writer creates is 0600 whatever the umask, made unnamed and
// linked (O_TMPFILE) or made at its temp name (a file system without
// O_TMPFILE): under umask 0777 either was mode 0, which a writer that is
// not root could never open again.
func TestACreatedMetaDBIsTheOwnersWhateverTheUmask(t *testing.T) {
	for _, noTmpfile := range []bool{false, true} {
		kd := newKeyDir(t)
		testHookNoTmpfile = noTmpfile
		old := syscall.Umask(0o777)
		d, err := OpenWriter(kd.dir, kd.db, testOpts)
		syscall.Umask(old)
		testHookNoTmpfile = false
		if err != nil {
			t.Fatalf("without O_TMPFILE %v: %v", noTmpfile, err)
		}
		d.Close()
		fi, err := os.Lstat(filepath.Join(kd.path, FileName))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("without O_TMPFILE %v: meta.db mode %v, want 0600", noTmpfile, fi.Mode().Perm())
		}
	}
}
