package fleet

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// A FromEtcd run sweeps the key dir's promotion temps under its lock; a
// link, a FIFO or a directory at such a name is no temp (store's sweeps
// and check --repair leave it, check reports it). It was unlinked (the
// link, the FIFO) and listed as a removed temp, in the dry run too.
func TestSweepStoreTempsLeavesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	temp := storeTempPrefix + "00000000000000e0"
	odd := []string{storeTempPrefix + "00000000000000e1", storeTempPrefix + "00000000000000e2", storeTempPrefix + "00000000000000e3"}
	if err := os.WriteFile(filepath.Join(dir, temp), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, odd[0]), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(temp, filepath.Join(dir, odd[1])); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, odd[2]), 0o700); err != nil {
		t.Fatal(err)
	}
	kd, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer kd.Close()
	for _, remove := range []bool{false, true} {
		if got := sweepStoreTemps(kd, remove); fmt.Sprint(got) != fmt.Sprint([]string{temp}) {
			t.Errorf("remove %v: swept %v, want only the regular temp %s", remove, got, temp)
		}
	}
	for _, n := range odd {
		if _, err := os.Lstat(filepath.Join(dir, n)); err != nil {
			t.Errorf("%s: %v", n, err)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, temp)); !os.IsNotExist(err) {
		t.Errorf("the regular temp is still there (%v)", err)
	}
}
