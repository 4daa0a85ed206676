package transcript

import "sessdb/internal/jsstr"

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
		c := raw[i]
		switch {
		case c == '\\':
			if raw[i+1] == 'u' {
				i += 6
			} else {
				i += 2
			}
			n++
		case c < 0x80:
			i++
			n++
		default:
			units, size := decodeUnits(raw[i:])
			n += int64(units)
			i += size
		}
	}
	return n
}

// textUnits returns the length in UTF-16 code units of b read as UTF-8 text
// (no JSON escapes are interpreted: each byte of an escape is a character of
// the text, as in the compact JSON of tool-call arguments).
func textUnits(b []byte) int64 {
	var n int64
	for i := 0; i < len(b); {
		if b[i] < 0x80 {
			i++
			n++
			continue
		}
		units, size := decodeUnits(b[i:])
		n += int64(units)
		i += size
	}
	return n
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
