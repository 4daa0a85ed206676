package transcript

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
)

// MaxHeaderBytes bounds the first-line read: a first line longer than this is not a header.
//
// pi's own header is about 200 bytes (a long cwd or parentSession path makes
// it longer); 64 KiB leaves room for any real one while keeping a resolve
// from reading a multi-megabyte first line of a damaged file.
const MaxHeaderBytes = 64 << 10

// Header is the first line of a transcript as far as sessdb reads it.
type Header struct {
	Type              string // "" when absent or not a string
	Version           int64  // 0 when absent (v1) or not a number
	ID                string // "" when absent or not a string
	IDIsString        bool   // the id is a string: pi loads no file whose header id is not
	Timestamp         string // raw, "" when absent/not a string
	TimestampIsString bool   // the timestamp is a string, so ParseTimestamp may read it
}

// IsSession reports whether the line was a JSON object with type "session" (the ladder's unparseable gate).
func (h Header) IsSession() bool { return h.Type == "session" }

// ReadHeader reads r up to the first '\n' (at most MaxHeaderBytes) and
// parses that line. Errors: ErrHeaderTooLong, ErrNotJSON (wrapped cause), io
// errors. An empty reader is ErrEmpty.
//
// The line is judged as the legacy store's JSON.parse judged it: whitespace
// around the value is allowed (a trailing "\r" included), and a JSON value
// that is not an object is a valid line whose Header is the zero value, so
// IsSession reports false. ReadHeader reads in chunks of at most 4 KiB and
// never more than MaxHeaderBytes+1 bytes in all, so a reader positioned at
// the start of a large file is left a few KiB in, at most.
func ReadHeader(r io.Reader) (Header, error) {
	const chunk = 4 << 10
	var buf []byte
	empty := 0
	for {
		if len(buf) > MaxHeaderBytes {
			return Header{}, ErrHeaderTooLong
		}
		want := min(chunk, MaxHeaderBytes+1-len(buf))
		buf = slices.Grow(buf, want)
		n, err := r.Read(buf[len(buf) : len(buf)+want])
		if i := bytes.IndexByte(buf[len(buf):len(buf)+n], '\n'); i >= 0 {
			return parseHeader(buf[:len(buf)+i])
		}
		buf = buf[:len(buf)+n]
		switch {
		case err == io.EOF:
			if len(buf) == 0 {
				return Header{}, ErrEmpty
			}
			if len(buf) > MaxHeaderBytes {
				return Header{}, ErrHeaderTooLong
			}
			return parseHeader(buf)
		case err != nil:
			return Header{}, err
		case n == 0:
			// io.Reader allows (0, nil); give up the way bufio does rather
			// than spin on a reader that never progresses.
			if empty++; empty >= 100 {
				return Header{}, io.ErrNoProgress
			}
		}
	}
}

// parseHeader judges one line as JSON.parse would (valid: without
// encoding/json's depth limit) and reads the header fields from it.
func parseHeader(line []byte) (Header, error) {
	if !valid(line) {
		var v json.RawMessage
		err := json.Unmarshal(line, &v) // only to name the syntax error
		return Header{}, fmt.Errorf("%w: %w", ErrNotJSON, err)
	}
	h, _, _ := headerFields(line)
	return h, nil
}

// headerFields reads the header fields of a valid JSON line. kind tells how
// pi reads the version: 'a' absent or null (pi's `header.version ?? 1`),
// 't' where pi's comparison of it throws (toPrimitiveThrows; v is NaN),
// else 'n' and v is JavaScript's ToNumber of the value, which pi's
// comparisons apply (NaN for a value that reads as no number).
func headerFields(line []byte) (h Header, v float64, kind byte) {
	kind = 'a'
	w := walker{b: line}
	if w.peek() != '{' {
		return Header{}, 0, kind
	}
	w.open()
	for w.more() {
		switch string(w.key()) {
		case "type":
			h.Type, _ = w.text()
		case "id":
			h.ID, h.IDIsString = w.text()
		case "timestamp":
			h.Timestamp, h.TimestampIsString = w.text()
		case "version":
			switch c := w.peek(); {
			case c == 'n':
				w.skip()
				h.Version, kind = 0, 'a'
			case c == '-' || c >= '0' && c <= '9':
				f, _ := w.number()
				h.Version, v, kind = 0, f, 'n'
				if math.Abs(f) < 1<<62 {
					h.Version = int64(f)
				}
			default:
				start := w.i
				h.Version, v, kind = 0, jsNumber(&w), 'n'
				if toPrimitiveThrows(w.b[start:w.i]) {
					kind = 't'
				}
			}
		default:
			w.skip()
		}
	}
	return h, v, kind
}
