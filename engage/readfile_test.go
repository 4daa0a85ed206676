package engage

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// ReadFile refuses what is not a regular file before reading it: a FIFO
// blocked its open forever (no writer) and /dev/zero would be read without
// end. Each is ErrNotRegular, at once.
func TestReadFileRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	os.Symlink(fifo, link)
	for _, path := range []string{fifo, link, os.DevNull, dir} {
		done := make(chan error, 1)
		go func() {
			_, err := ReadFile(path)
			done <- err
		}()
		select {
		case err := <-done:
			var pe *os.PathError
			if !errors.Is(err, ErrNotRegular) || !errors.As(err, &pe) || pe.Path != path {
				t.Errorf("%s: %v; want ErrNotRegular naming the path", path, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: ReadFile blocked", path)
		}
	}
	// A link to a regular file is the file: the operator's own path.
	file := filepath.Join(dir, "t.jsonl")
	os.WriteFile(file, []byte(`{"type":"session","version":3,"id":"s","timestamp":"2026-11-01T00:00:00.000Z","cwd":"/w"}`+"\n"), 0o600)
	os.Symlink(file, filepath.Join(dir, "to-file"))
	if _, err := ReadFile(filepath.Join(dir, "to-file")); err != nil {
		t.Errorf("a link to a transcript: %v", err)
	}
}
