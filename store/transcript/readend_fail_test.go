package transcript

import (
	"errors"
	"io"
	"testing"
)

// failsWithItsBytes returns data and err from its first read (as a reader
// may: the bytes it got before the failure, and the failure), then EOF,
// as a file whose one read failed (a soft mount's EIO) reads on.
type failsWithItsBytes struct {
	data []byte
	err  error
	done bool
}

func (f *failsWithItsBytes) Read(p []byte) (int, error) {
	if f.done {
		return 0, io.EOF
	}
	f.done = true
	return copy(p, f.data), f.err
}

// A read that failed makes ReadEnd's error non-nil, as its doc promises,
// even where the bytes that came with the failure already decided that
// pi would not load the file: what was not read is unknown, and an End
// judged on part of a file is not pi's answer for it.
func TestReadEndOfAReadThatFailedAfterAnInvalidLineIsAnError(t *testing.T) {
	eio := errors.New("input/output error")
	r := &failsWithItsBytes{data: []byte("{\"type\":\"message\",\"id\":\"a\"}\n"), err: eio}
	end, err := ReadEnd(r)
	if err == nil {
		t.Fatalf("ReadEnd of a reader that failed = %+v, nil; want an error", end)
	}
	if end != (End{}) {
		t.Errorf("ReadEnd of a reader that failed = %+v, %v; want the zero End", end, err)
	}
}
