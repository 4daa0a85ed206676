package shared

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"sessdb/fleet/internal/sharedfs"
	"sessdb/internal/durable/powercut"
)

// A Write that finds its key's directory already made by another writer's
// first Write of the key, which has not fsynced the transcripts dir yet
// (descheduled between its mkdir and that fsync), returns only once the
// directory's name is durable: its caller commits a record that names the
// file, and a power cut must not take the directory, and the file with
// it. Before, Write fsynced the transcripts dir only after a mkdir of its
// own, and every cut after it returned lost the file.
func TestAWriteIntoAnotherWritersNewKeyDirIsDurableOnceReturned(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "t")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	j := powercut.New()
	defer sharedfs.Use(j)()
	root, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	// The other writer's mkdir, through the journal, and no fsync after it.
	made, err := j.Mkdir(root, key, 0o700)
	root.Close()
	if err != nil || !made {
		t.Fatalf("the other writer's mkdir: %v %v", made, err)
	}
	data := []byte(`{"type":"session"}` + "\n")
	name, _, _, err := Write(context.Background(), dir, key, 1, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	for _, img := range j.Images(t, parent) {
		got, err := os.ReadFile(filepath.Join(img.Dir, "t", name))
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("a cut after Write returned (%s, lost %v): %s holds %q, %v; want %q", img.Mode, img.Lost, name, got, err, data)
		}
	}
}
