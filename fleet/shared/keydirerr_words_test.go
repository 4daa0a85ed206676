package shared

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// KeyDirErr says a refusal of its look (access) as the write's refused
// call says it (mkdir <dir>/<key>, open <dir>/<key>/.tmp-<random>), and
// every other error as it is: a transcripts dir that is gone is its
// open's failure, naming the dir, not a mkdir of the key's dir, which no
// one could mend by making the key dir writable.
func TestKeyDirErrSaysAGoneDirAsItsOpen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gone")
	key := strings.Repeat("a", 32)
	err := KeyDirErr(dir, key)
	var pe *os.PathError
	if !errors.As(err, &pe) || !errors.Is(err, fs.ErrNotExist) || pe.Op != "open" || pe.Path != dir {
		t.Fatalf("KeyDirErr of a transcripts dir that is gone: %v; want open %s: no such file or directory", err, dir)
	}
}
