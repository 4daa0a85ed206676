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

// A file pi rewrites while ReadFile reads it (pi truncates and rewrites a
// file it migrates, or one whose header it finds invalid) gave a replay of
// part of the old file, or of the old file's start and the new one's end,
// with no word: it is ErrChanged. A file appended to meanwhile, which is
// how pi writes, is read as far as the read got, with no error.
func TestReadFileRewrittenWhileRead(t *testing.T) {
	const head = `{"type":"session","version":3,"id":"s","timestamp":"2026-11-01T00:00:00.000Z","cwd":"/w"}` + "\n"
	entry := func(id, parent string) string {
		p := "null"
		if parent != "" {
			p = `"` + parent + `"`
		}
		return `{"type":"message","id":"` + id + `","parentId":` + p + `,"message":{"role":"user","content":"hello"}}` + "\n"
	}
	old := head + entry("a", "") + entry("b", "a") + entry("c", "b")
	file := filepath.Join(t.TempDir(), "t.jsonl")
	defer func() { readFileHook = nil }()
	for _, c := range []struct {
		name    string
		change  func() error
		changed bool
	}{
		{"truncated", func() error { return os.Truncate(file, int64(len(head)+10)) }, true},
		{"rewritten longer", func() error {
			return os.WriteFile(file, []byte(`{"type":"session","version":3,"id":"t","timestamp":"2026-11-01T00:00:00.000Z","cwd":"/w"}`+"\n"+entry("x", "")+entry("y", "x")+entry("z", "y")+entry("w", "z")), 0o600)
		}, true},
		{"appended to", func() error {
			f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND, 0)
			if err == nil {
				_, err = f.WriteString(entry("d", "c"))
				f.Close()
			}
			return err
		}, false},
	} {
		if err := os.WriteFile(file, []byte(old), 0o600); err != nil {
			t.Fatal(err)
		}
		readFileHook = func() {
			if err := c.change(); err != nil {
				t.Fatal(err)
			}
		}
		tr, err := ReadFile(file)
		if got := errors.Is(err, ErrChanged); got != c.changed {
			t.Errorf("%s: %v; want ErrChanged %v", c.name, err, c.changed)
		}
		if !c.changed && (err != nil || tr.Stats.Entries != 3) {
			t.Errorf("%s: %v, %+v", c.name, err, tr)
		}
	}
}
