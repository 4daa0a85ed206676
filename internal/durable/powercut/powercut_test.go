package powercut

import (
	"os"
	"path/filepath"
	"testing"

	"sessdb/internal/fsat"
)

// TestMkdirIsTakenBackWithItsContents: a directory made through the
// journal vanishes in a power cut before its parent's fsync, with
// everything in it, fsynced or not; once the parent is fsynced it stays,
// and what is in it is judged by its own fsyncs.
func TestMkdirIsTakenBackWithItsContents(t *testing.T) {
	parent := t.TempDir()
	pd, err := fsat.OpenDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	defer pd.Close()
	j := New()
	made, err := j.Mkdir(pd, "k", 0o700)
	if err != nil || !made {
		t.Fatalf("mkdir: %v %v", made, err)
	}
	if again, err := j.Mkdir(pd, "k", 0o700); err != nil || again {
		t.Fatalf("mkdir of an existing name: made %v, %v", again, err)
	}
	kd, err := fsat.OpenDirAt(pd, "k")
	if err != nil {
		t.Fatal(err)
	}
	defer kd.Close()
	f, err := j.CreateTemp(kd, "f")
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("data")
	if err := j.SyncFile(f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := j.SyncDir(kd); err != nil {
		t.Fatal(err)
	}
	has := func(dir, name string) bool {
		_, err := os.Lstat(filepath.Join(dir, name))
		return err == nil
	}
	for _, im := range j.Images(t, parent) {
		// Only a mode in which the mkdir does not land may take it back.
		if lands := im.Mode != Modes[0].Name && im.Mode != Modes[1].Name; has(im.Dir, "k") != lands || lands && !has(im.Dir, "k/f") {
			t.Errorf("%s: k there %v, k/f there %v (lost: %v)", im.Mode, has(im.Dir, "k"), has(im.Dir, "k/f"), im.Lost)
		}
	}
	if err := j.SyncDir(pd); err != nil {
		t.Fatal(err)
	}
	for _, im := range j.Images(t, parent) {
		if !has(im.Dir, "k/f") {
			t.Errorf("%s: k/f is gone after both dirs were fsynced", im.Mode)
		}
	}
	j.Cut(t)
	if !has(parent, "k/f") {
		t.Error("the cut took back k/f after both dirs were fsynced")
	}
}
