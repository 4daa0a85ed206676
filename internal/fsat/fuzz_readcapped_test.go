package fsat

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// chunkedReader hands out data in reads of the sizes chunks gives, in
// turn (a 0 is a read that returns nothing and no error, as io.Reader
// allows), then an endless stream of 'z' when endless: a file that keeps
// growing while it is read. It counts the bytes it handed out.
type chunkedReader struct {
	data    []byte
	chunks  []byte
	endless bool
	i       int
	read    int
}

func (c *chunkedReader) Read(p []byte) (int, error) {
	n := len(p)
	if len(c.chunks) > 0 {
		n = min(n, int(c.chunks[c.i%len(c.chunks)]))
		c.i++
	}
	if len(c.data) == 0 {
		if !c.endless {
			return 0, io.EOF
		}
		for k := range p[:n] {
			p[k] = 'z'
		}
		c.read += n
		return n, nil
	}
	n = copy(p[:n], c.data)
	c.data = c.data[n:]
	c.read += n
	return n, nil
}

// FuzzReadCapped checks the cap of ReadSmallFile and ReadConfigFile's read
// (a ticket, a sidecar, a password file), whatever the file holds and
// however the reads are cut: it never takes more than max+1 bytes from
// the reader, what it returns is the whole content and nothing else, and
// a content over max, or one that never ends, is ErrTooLarge with nothing
// returned, never a prefix taken as the file.
func FuzzReadCapped(f *testing.F) {
	f.Add([]byte("session"), []byte{1, 2, 3}, uint16(7), false)
	f.Add([]byte("x"), []byte{}, uint16(0), false)
	f.Add(bytes.Repeat([]byte("ab"), 300), []byte{255, 0, 7}, uint16(599), false)
	f.Add([]byte{}, []byte{64}, uint16(100), true)
	f.Fuzz(func(t *testing.T, data, chunks []byte, max uint16, endless bool) {
		if len(chunks) > 0 && bytes.Count(chunks, []byte{0}) == len(chunks) {
			return // only empty reads: io.ReadFull's ErrNoProgress, not the cap
		}
		r := &chunkedReader{data: bytes.Clone(data), chunks: chunks, endless: endless}
		got, err := readCapped(r, int(max))
		if r.read > int(max)+1 {
			t.Fatalf("read %d bytes with a cap of %d", r.read, max)
		}
		fits := !endless && len(data) <= int(max)
		switch {
		case fits && (err != nil || !bytes.Equal(got, data)):
			t.Fatalf("%d bytes under a cap of %d: %d bytes back, %v", len(data), max, len(got), err)
		case !fits && (!errors.Is(err, ErrTooLarge) || got != nil):
			t.Fatalf("%d bytes (endless %v) over a cap of %d: %d bytes back, %v; want ErrTooLarge", len(data), endless, max, len(got), err)
		}
	})
}
