package main

import (
	"errors"
	"testing"
)

// failAfter is a writer that takes n writes and fails every one after.
type failAfter struct {
	n   int
	err error
}

func (w *failAfter) Write(p []byte) (int, error) {
	if w.n == 0 {
		return 0, w.err
	}
	w.n--
	return len(p), nil
}

// writeTable returns the error of a line it could not write, whichever
// line that is: a table written line by line (36cf25c) must not say it
// was written where a line was lost.
func TestWriteTableReturnsTheErrorOfAnyLine(t *testing.T) {
	cols := []column{{"A", 0}, {"NOTE", 0}}
	rows := [][]string{{"a", "one"}, {"b", "two"}, {"c", "three"}}
	lost := errors.New("disk full")
	for n := range len(rows) + 1 {
		w := &failAfter{n: n, err: lost}
		if err := writeTable(w, cols, rows, 0); !errors.Is(err, lost) {
			t.Errorf("a writer that fails after %d lines: writeTable = %v, want %v", n, err, lost)
		}
	}
}
