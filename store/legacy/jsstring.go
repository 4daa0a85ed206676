package legacy

import (
	"strings"
	"unicode/utf8"
)

// The legacy reader was JavaScript: it decoded a sidecar with Node's UTF-8
// decoder, trimmed it with String.prototype.trim and split it with /\s+/.
// These helpers reproduce exactly those three operations, because a value
// that trims or splits differently here could flip a verdict at the cutover.

// isJSSpace reports whether r is in ECMAScript's WhiteSpace or
// LineTerminator sets, which both trim and \s use. It differs from
// unicode.IsSpace: U+FEFF is in, U+0085 (NEL) is out.
func isJSSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0x00A0, 0x1680,
		0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF:
		return true
	}
	return r >= 0x2000 && r <= 0x200A
}

// jsTrim is String.prototype.trim.
func jsTrim(s string) string { return strings.TrimFunc(s, isJSSpace) }

// jsSplitSpace is s.split(/\s+/): a leading or trailing run of whitespace
// yields an empty first or last field, and "" yields one empty field.
func jsSplitSpace(s string) []string {
	var out []string
	start, i := 0, 0
	for i < len(s) {
		r, w := utf8.DecodeRuneInString(s[i:])
		if !isJSSpace(r) {
			i += w
			continue
		}
		out = append(out, s[start:i])
		for i < len(s) {
			r, w = utf8.DecodeRuneInString(s[i:])
			if !isJSSpace(r) {
				break
			}
			i += w
		}
		start = i
	}
	return append(out, s[start:])
}

// decodeUTF8 decodes b as Node's Buffer.toString("utf8") does: a byte order
// mark is kept (trim removes it later), and each maximal ill-formed
// subsequence becomes one U+FFFD, as the WHATWG Encoding Standard specifies.
// Go's own conversions differ: range and utf8.DecodeRune yield one U+FFFD per
// byte of a truncated sequence, where Node yields one for the whole sequence.
func decodeUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var sb strings.Builder
	sb.Grow(len(b) + 8)
	for i := 0; i < len(b); {
		c := b[i]
		if c < 0x80 {
			sb.WriteByte(c)
			i++
			continue
		}
		// need continuation bytes; the first must lie in [lo, hi], which
		// is how overlongs, surrogates and values over U+10FFFF are refused.
		need, lo, hi := 0, byte(0x80), byte(0xBF)
		switch {
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
		}
		j := i + 1
		for k := 0; k < need; k++ {
			if j >= len(b) || b[j] < lo || b[j] > hi {
				need = -1
				break
			}
			lo, hi = 0x80, 0xBF
			j++
		}
		if need > 0 {
			sb.Write(b[i:j])
		} else {
			// The byte that broke the sequence is not consumed: it may
			// start the next character.
			sb.WriteRune(utf8.RuneError)
		}
		i = j
	}
	return sb.String()
}
