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

// What root writes in a transcripts dir a worker owns (a reap, a repair,
// a migration run as root, the fleet's first writer) is the worker's: the
// mark, a key dir and a generation. Before, each was root's, mode 0600,
// and every promote by the worker was promote-failed (the mark), or every
// resolve of the key failed (a generation).
func TestWhatRootWritesInAWorkersDirIsTheWorkers(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root writes files another user owns: run as root to test it")
	}
	const worker = 65534
	dir := t.TempDir()
	if err := os.Chown(dir, worker, worker); err != nil {
		t.Fatal(err)
	}
	name := write(t, dir, []byte("x\n"))
	if _, err := WriteMark(dir, Mark{ID: "0123456789abcdef0123456789abcdef", Prefix: "/sessdb/"}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(dir, key), filepath.Join(dir, name), filepath.Join(dir, MarkName)} {
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			t.Fatal(err)
		}
		if st.Uid != worker || st.Gid != worker {
			t.Errorf("%s: owned by %d:%d, want the dir's owner %d:%d", p, st.Uid, st.Gid, worker, worker)
		}
	}
}
