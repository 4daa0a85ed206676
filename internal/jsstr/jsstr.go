// Package jsstr holds the two pieces of JavaScript string semantics that
// sessdb must reproduce exactly, because the legacy store and pi are
// JavaScript: which runes String.prototype.trim removes, and how Node
// decodes UTF-8 (the WHATWG decoder), which differs from Go's on
// ill-formed input.
package jsstr

// IsSpace reports whether r is whitespace to String.prototype.trim and
// /\s/: ECMAScript's WhiteSpace and LineTerminator sets. U+0085 is not one
// of them; U+FEFF is.
func IsSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0x00A0, 0x1680,
		0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF:
		return true
	}
	return r >= 0x2000 && r <= 0x200A
}

// DecodeStep decodes the UTF-8 sequence at the start of b (len(b) > 0) as
// the WHATWG decoder Node uses does. For a well-formed sequence it returns
// its length and ok. For an ill-formed one it returns the length of its
// maximal subpart, which decodes to one U+FFFD, and !ok; Go's
// utf8.DecodeRune would instead yield one U+FFFD per byte of a truncated
// sequence. The byte that breaks a sequence is not consumed: it may start
// the next character.
func DecodeStep(b []byte) (size int, ok bool) {
	c := b[0]
	// need continuation bytes; the first must lie in [lo, hi], which is
	// how overlongs, surrogates and values over U+10FFFF are refused.
	var need int
	lo, hi := byte(0x80), byte(0xBF)
	switch {
	case c < 0x80:
		return 1, true
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
		return 1, false // not a lead byte
	}
	i := 1
	for ; i <= need; i++ {
		if i >= len(b) || b[i] < lo || b[i] > hi {
			return i, false
		}
		lo, hi = 0x80, 0xBF
	}
	return i, true
}
