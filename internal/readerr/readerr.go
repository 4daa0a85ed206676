// Package readerr tells a reader's own failure from what its consumer
// made of the bytes: a parser that returns both alike (transcript's
// ReadHeader and Load) reads through a Reader, which keeps the failure.
package readerr

import "io"

// Reader passes the reads of R through and keeps in Err the error of the
// last one that failed (io.EOF is no failure); nil while none has.
type Reader struct {
	R   io.Reader
	Err error
}

// Read implements io.Reader.
func (r *Reader) Read(p []byte) (int, error) {
	n, err := r.R.Read(p)
	if err != nil && err != io.EOF {
		r.Err = err
	}
	return n, err
}
