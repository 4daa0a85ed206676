package store

import (
	"bytes"
	"context"
	"hash/crc32"
	"os"
	"reflect"
	"testing"

	"sessdb/store/transcript"
)

// FuzzCRCSplit checks the checksum a promotion judges the job's prefix
// by, however the read is cut into writes: the sum is the whole stream's
// CRC32C and the prefix exactly that of its first at bytes (of all of it
// when it is shorter, which readStaged then refuses by size).
func FuzzCRCSplit(f *testing.F) {
	f.Add([]byte("hello, world\n"), uint16(5), []byte{3, 2, 8})
	f.Add([]byte("x"), uint16(0), []byte{})
	f.Add([]byte("abcdef"), uint16(6), []byte{6})
	f.Add([]byte("abcdef"), uint16(9), []byte{1})
	f.Fuzz(func(t *testing.T, data []byte, at uint16, chunks []byte) {
		c := &crcSplit{at: int64(at)}
		for rest, i := data, 0; len(rest) > 0; i++ {
			n := len(rest)
			if len(chunks) > 0 {
				n = min(n, max(1, int(chunks[i%len(chunks)]))) // a write of 0 bytes moves nothing
			}
			if w, err := c.Write(rest[:n]); w != n || err != nil {
				t.Fatalf("Write of %d bytes = %d, %v", n, w, err)
			}
			rest = rest[n:]
		}
		if c.off != int64(len(data)) || c.sum != crc32.Checksum(data, castagnoli) {
			t.Fatalf("%d bytes: sum %08x after %d; want %08x", len(data), c.sum, c.off, crc32.Checksum(data, castagnoli))
		}
		if int(at) <= len(data) && c.prefix != crc32.Checksum(data[:at], castagnoli) {
			t.Fatalf("%d bytes cut at %d by %v: prefix %08x, want %08x", len(data), at, chunks, c.prefix, crc32.Checksum(data[:at], castagnoli))
		}
	})
}

// FuzzReadStaged gives readStaged any staged file a job could leave (not
// a transcript, a cycle, a torn tail) and any ticket's claim about its
// prefix. A tail the open judged otherwise than the bytes read bear out
// (changed in between) is an error. Whatever else the bytes, it reads
// them all: the checksum is the
// whole file's (and the newline the copy adds to a torn tail), the prefix
// is judged by the ticket's bytes and checksum alone, the end of run is
// ReadEnd's, and the run is Unchanged only for the file the job was given,
// else Unknown where ReadEnd failed (a cycle, a line too long).
func FuzzReadStaged(f *testing.F) {
	hdr := `{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}` + "\n"
	msg := `{"type":"message","id":"a","message":{"role":"assistant","content":[],"stopReason":"stop"}}` + "\n"
	f.Add([]byte(hdr+msg), uint16(len(hdr)), true, false, false)
	f.Add([]byte(hdr+msg), uint16(len(hdr+msg)), true, true, false)
	loop := `{"type":"message","id":"a","parentId":"a"}`
	f.Add([]byte(hdr+loop), uint16(0), false, false, true)
	// A job given a transcript ReadEnd cannot read, which appended
	// nothing: unchanged, which sizes tell, not unknown.
	f.Add([]byte(hdr+loop+"\n"), uint16(len(hdr+loop+"\n")), true, true, false)
	f.Add([]byte("not json\n"), uint16(3), true, true, true)
	// Tails the open judged otherwise than the bytes read: changed since.
	f.Add([]byte(hdr+msg), uint16(len(hdr)), true, true, true)
	f.Add([]byte(hdr+loop), uint16(0), false, false, false)
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte, given uint16, ticket, rightCRC, torn bool) {
		fl, err := os.CreateTemp(dir, "staged")
		if err != nil {
			t.Fatal(err)
		}
		defer os.Remove(fl.Name())
		defer fl.Close()
		if _, err := fl.Write(data); err != nil {
			t.Fatal(err)
		}
		sess := Session{Bytes: int64(given)}
		if ticket {
			sess.Ticket = "0123456789abcdef0123456789abcdef"
		}
		if int(given) <= len(data) {
			sess.CRC32C = Checksum(crc32.Checksum(data[:given], castagnoli))
		}
		if !rightCRC {
			sess.CRC32C ^= 1
		}
		c, err := readStaged(context.Background(), stagedFile{f: fl, size: int64(len(data)), torn: torn}, sess)
		if len(data) > 0 && (data[len(data)-1] != '\n') != torn {
			// The open's look at the last byte saw another than this
			// read: the file changed in between.
			if err == nil {
				t.Fatalf("readStaged of a %d-byte file whose tail the open judged torn=%v: no error", len(data), torn)
			}
			return
		}
		if err != nil {
			t.Fatalf("readStaged of a %d-byte regular file: %v", len(data), err)
		}
		sum := crc32.Checksum(data, castagnoli)
		if torn {
			sum = crc32.Update(sum, castagnoli, []byte{'\n'})
		}
		if c.sum != sum {
			t.Fatalf("sum %08x, want %08x", c.sum, sum)
		}
		prefixOK := !ticket || int(given) <= len(data) && rightCRC
		if c.prefixOK != prefixOK {
			t.Fatalf("prefixOK %v for a ticket %v of %d bytes (checksum right %v) over %d; want %v", c.prefixOK, ticket, given, rightCRC, len(data), prefixOK)
		}
		end, endErr := transcript.ReadEnd(bytes.NewReader(data))
		if endErr != nil {
			end = transcript.End{}
		}
		if !reflect.DeepEqual(c.end, end) {
			t.Fatalf("end %+v; ReadEnd gives %+v", c.end, end)
		}
		run := end.Last.Shape()
		switch {
		case prefixOK && int(given) == len(data):
			run = transcript.Unchanged
		case endErr != nil:
			// What pi would report is not known: no shape stands for it.
			run = transcript.Unknown
		}
		if c.run != run {
			t.Fatalf("run %v, want %v", c.run, run)
		}
	})
}
