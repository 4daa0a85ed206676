package main

import (
	"bytes"
	"io"
	"os"
)

// spoolInMemory is the most output a spool keeps in memory before it
// spills the rest to a temp file. (A variable: a test spills sooner.)
var spoolInMemory = 8 << 20

// A spool holds a command's output until the command knows it succeeded
// (a failed dump prints nothing), without holding all of it in memory: a
// fleet's dump --json of records with megabyte stamps is hundreds of
// megabytes. The first spoolInMemory bytes stay in memory; the rest go to
// a temp file in os.TempDir(), unlinked as soon as it is made, so that a
// kill leaves nothing behind (an empty file, in the moment between the
// create and the unlink: Linux's O_TMPFILE would close that moment, at the
// cost of a second path for other systems and file systems without it)
// and no other user can open it by name (it is 0600 in any case).
// Where the temp file cannot be made or written (no TMPDIR, a full disk),
// the rest is kept in memory, as all of it was before: the spool never
// makes a command fail that would have succeeded.
type spool struct {
	head    bytes.Buffer // the first bytes, up to limit
	file    *os.File     // the middle, spilled; nil when none
	spilled int64        // the bytes written whole to file
	tail    bytes.Buffer // what file could not take
	broken  bool         // file failed: the rest goes to tail
	limit   int
}

func newSpool() *spool { return &spool{limit: spoolInMemory} }

func (s *spool) Write(p []byte) (int, error) {
	n := len(p)
	if room := s.limit - s.head.Len(); room > 0 && s.file == nil && !s.broken {
		take := min(room, len(p))
		s.head.Write(p[:take])
		p = p[take:]
	}
	if len(p) > 0 && !s.broken && s.file == nil {
		s.file, s.broken = spillFile()
	}
	if len(p) > 0 && !s.broken {
		w, err := s.file.Write(p)
		s.spilled += int64(w)
		p = p[w:]
		s.broken = err != nil
	}
	s.tail.Write(p)
	return n, nil
}

// spillFile makes the spool's temp file, already unlinked; broken when it
// cannot.
func spillFile() (f *os.File, broken bool) {
	f, err := os.CreateTemp("", ".sessdb-spool-*")
	if err != nil {
		return nil, true
	}
	if err := os.Remove(f.Name()); err != nil {
		// A file left by name would outlive a kill: keep to memory.
		f.Close()
		return nil, true
	}
	return f, false
}

// WriteTo writes everything the spool holds, in order, to w.
func (s *spool) WriteTo(w io.Writer) (int64, error) {
	parts := []io.Reader{&s.head}
	if s.file != nil {
		parts = append(parts, io.NewSectionReader(s.file, 0, s.spilled))
	}
	return io.Copy(w, io.MultiReader(append(parts, &s.tail)...))
}

// Close releases the temp file, if one was made.
func (s *spool) Close() error {
	if s.file == nil {
		return nil
	}
	return s.file.Close()
}
