package legacy

import (
	"strings"
	"unicode/utf8"

	"sessdb/internal/jsstr"
)

// The legacy reader was JavaScript: it decoded a sidecar with Node's UTF-8
// decoder, trimmed it with String.prototype.trim and split it with /\s+/.
// These helpers reproduce exactly those three operations, because a value
// that trims or splits differently here could flip a verdict at the cutover.

// jsTrim is String.prototype.trim.
func jsTrim(s string) string { return strings.TrimFunc(s, jsstr.IsSpace) }

// jsSplitSpace is s.split(/\s+/): a leading or trailing run of whitespace
// yields an empty first or last field, and "" yields one empty field.
func jsSplitSpace(s string) []string {
	var out []string
	start, i := 0, 0
	for i < len(s) {
		r, w := utf8.DecodeRuneInString(s[i:])
		if !jsstr.IsSpace(r) {
			i += w
			continue
		}
		out = append(out, s[start:i])
		for i < len(s) {
			r, w = utf8.DecodeRuneInString(s[i:])
			if !jsstr.IsSpace(r) {
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
		size, ok := jsstr.DecodeStep(b[i:])
		if ok {
			sb.Write(b[i : i+size])
		} else {
			sb.WriteRune(utf8.RuneError)
		}
		i += size
	}
	return sb.String()
}
