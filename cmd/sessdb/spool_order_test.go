package main

import (
	"os"
	"path/filepath"
	"testing"
)

// A spool that could not make its file keeps to memory for good: a temp
// dir that comes into being later is not spilled to, for what it would
// take there would come before what memory already holds.
func TestASpoolThatCouldNotSpillNeverSpillsLater(t *testing.T) {
	tmp := filepath.Join(t.TempDir(), "later")
	t.Setenv("TMPDIR", tmp)
	s := &spool{limit: 4}
	defer s.Close()
	want := writeAll(t, s, "abcdef")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	want += writeAll(t, s, "ghij")
	if s.file != nil {
		t.Errorf("a file was made once TMPDIR came into being; want the spool kept to memory")
	}
	if got := spooled(t, s); got != want {
		t.Errorf("spooled %q; want %q", got, want)
	}
}
