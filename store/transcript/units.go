package transcript

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

// decodeUnits decodes the UTF-8 sequence at the start of b the way the
// WHATWG decoder Node uses does, and returns how many UTF-16 code units it
// yields and how many bytes it consumed. An ill-formed sequence yields one
// U+FFFD for its longest valid prefix (the "maximal subpart"), where Go's
// utf8.DecodeRune would yield one per byte.
func decodeUnits(b []byte) (units, size int) {
	c := b[0]
	var need int
	lo, hi := byte(0x80), byte(0xBF)
	switch {
	case c < 0x80:
		return 1, 1
	case c >= 0xC2 && c <= 0xDF:
		need = 1
	case c == 0xE0:
		need, lo = 2, 0xA0
	case c == 0xED:
		need, hi = 2, 0x9F
	case c >= 0xE1 && c <= 0xEF:
		need = 2
	case c == 0xF0:
		need, lo = 3, 0x90
	case c == 0xF4:
		need, hi = 3, 0x8F
	case c >= 0xF1 && c <= 0xF3:
		need = 3
	default:
		return 1, 1 // not a lead byte: one U+FFFD
	}
	i := 1
	for ; i <= need; i++ {
		if i >= len(b) || b[i] < lo || b[i] > hi {
			return 1, i // truncated: U+FFFD for what was consumed
		}
		lo, hi = 0x80, 0xBF
	}
	if need == 3 {
		return 2, i // outside the BMP: a surrogate pair
	}
	return 1, i
}

// isJSSpace reports whether r is whitespace to String.prototype.trim:
// ECMAScript's WhiteSpace and LineTerminator sets. JSON.parse accepts only
// the four ASCII ones around a value; the others matter because pi trims the
// whole file before splitting it and skips lines that trim to nothing.
func isJSSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0xA0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF:
		return true
	}
	return r >= 0x2000 && r <= 0x200A
}
