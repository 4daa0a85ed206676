package engage

import (
	"bytes"
	"crypto/sha256"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// head hashes a file's first line and at least its first headMin bytes,
// no more, and the bytes it hashed are the file's start, contiguous:
// whatever the reads' sizes (one byte at a time, or half a file) and
// wherever the first line ends (within the first read, past headMin, or
// nowhere), its count is that prefix's length and its sum that prefix's,
// which rewritten reads again to compare. A head that hashed on to the end
// of the file read it twice; one that skipped bytes while the first line
// ran past headMin took an unchanged file for a rewritten one.
func TestHeadHashesTheFirstLineAndHeadMinBytesOfTheStart(t *testing.T) {
	body := strings.Repeat(`{"type":"message"}`+"\n", 2000) // 38,000 bytes
	for _, c := range []struct {
		name string
		file string
		want int // the bytes hashed
	}{
		{"a short first line", `{"type":"session"}` + "\n" + body, headMin},
		{"a first line past headMin", strings.Repeat("h", 3*headMin) + "\n" + body, 3*headMin + 1},
		{"no line", strings.Repeat("h", 3*headMin), 3 * headMin},
		{"shorter than headMin", "{}\n{}\n", 6},
	} {
		for _, r := range []struct {
			name string
			wrap func(io.Reader) io.Reader
		}{
			{"whole", func(r io.Reader) io.Reader { return r }},
			{"a byte at a time", iotest.OneByteReader},
			{"half at a time", func(r io.Reader) io.Reader { return iotest.HalfReader(r) }},
		} {
			h := &head{r: r.wrap(strings.NewReader(c.file)), sum: sha256.New()}
			got, err := io.ReadAll(h)
			if err != nil || string(got) != c.file {
				t.Fatalf("%s, %s: read %d bytes, %v; want the file's %d", c.name, r.name, len(got), err, len(c.file))
			}
			want := sha256.Sum256([]byte(c.file[:c.want]))
			if h.n != int64(c.want) || !bytes.Equal(h.sum.Sum(nil), want[:]) {
				t.Errorf("%s, %s: hashed %d bytes (sum of the first %d: %v); want the first %d", c.name, r.name, h.n, h.n, bytes.Equal(h.sum.Sum(nil), want[:]), c.want)
			}
		}
	}
}
