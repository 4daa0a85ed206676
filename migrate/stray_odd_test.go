package migrate

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// A rollback's dry run lists as removed the promotion temps its run's
// roll-forward sweeps; that sweep takes regular files only, so a link, a
// FIFO or a directory at a temp's name is not listed either (the dry run
// would otherwise plan a removal the run never makes).
func TestStrayStoreTempsListsRegularFilesOnly(t *testing.T) {
	dir := t.TempDir()
	temp := storeTempPrefix + "00000000000000d0"
	if err := os.WriteFile(filepath.Join(dir, temp), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, storeTempPrefix+"00000000000000d1"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(temp, filepath.Join(dir, storeTempPrefix+"00000000000000d2")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, storeTempPrefix+"00000000000000d3"), 0o700); err != nil {
		t.Fatal(err)
	}
	kd, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer kd.Close()
	if got := strayStoreTemps(kd, nil); fmt.Sprint(got) != fmt.Sprint([]string{temp}) {
		t.Errorf("listed %v, want only the regular temp %s", got, temp)
	}
}
