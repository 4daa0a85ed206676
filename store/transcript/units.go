package transcript

import (
	"encoding/binary"
	"math/bits"

	"sessdb/internal/jsstr"
)

// pi measures text with JavaScript's String length: UTF-16 code units of the
// string Node decoded from the file's UTF-8. Counting bytes or runes instead
// would overcount every accented letter and undercount every emoji, and the
// estimate must match pi's to the token.

// literalUnits returns the length in UTF-16 code units of the string whose
// JSON-escaped contents (between the quotes) are raw. Every escape stands for
// one code unit: \uXXXX is one unit even when it is half of a surrogate pair,
// because the pair is written as two escapes.
func literalUnits(raw []byte) int64 {
	var n int64
	for i := 0; i < len(raw); {
		j := asciiRun(raw, i, '\\')
		n += int64(j - i) // one unit per ASCII byte
		if i = j; i >= len(raw) {
			break
		}
		if raw[i] == '\\' {
			if raw[i+1] == 'u' {
				i += 6
			} else {
				i += 2
			}
			n++
			continue
		}
		units, size := decodeUnits(raw[i:])
		n += int64(units)
		i += size
	}
	return n
}

// asciiRun returns the index of the first byte at or after i that is not
// ASCII or is stop; or len(b). Each ASCII byte is one code unit, and most of
// a transcript's text is ASCII, so the run is passed over eight bytes at a
// time (see zeroByte) and only the rest is decoded.
func asciiRun(b []byte, i int, stop byte) int {
	for ; i+8 <= len(b); i += 8 {
		w := binary.LittleEndian.Uint64(b[i:])
		if m := w&highs | zeroByte(w^(ones*uint64(stop))); m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for i < len(b) && b[i] < 0x80 && b[i] != stop {
		i++
	}
	return i
}

// decodeUnits decodes the UTF-8 sequence at the start of b as Node does
// and returns how many UTF-16 code units it yields (two for a character
// outside the BMP, one for U+FFFD) and how many bytes it consumed.
func decodeUnits(b []byte) (units, size int) {
	size, ok := jsstr.DecodeStep(b)
	if ok && size == 4 {
		return 2, size
	}
	return 1, size
}
