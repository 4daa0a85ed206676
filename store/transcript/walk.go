package transcript

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"sessdb/internal/jsstr"
)

// walker steps through one JSON text that valid has already accepted.
// Because the text is known to be valid it checks nothing and cannot fail,
// and it hands back sub-slices of the line instead of decoded values, so
// skipping a 100 KB tool output costs a byte scan and no allocation.
//
// Keys are compared exactly, as JSON.parse does (encoding/json would match
// "Content" to a "content" field), and a repeated key overrides the earlier
// one because callers assign in the order members appear.
type walker struct {
	b []byte
	i int
}

// ws skips whitespace: JSON's four bytes only, the only ones json.Valid
// lets stand between tokens.
func (w *walker) ws() {
	for w.i < len(w.b) {
		switch w.b[w.i] {
		case ' ', '\t', '\n', '\r':
			w.i++
		default:
			return
		}
	}
}

// peek returns the first byte of the next value: '"', '{', '[', 't', 'f',
// 'n', or the start of a number.
func (w *walker) peek() byte {
	w.ws()
	if w.i < len(w.b) {
		return w.b[w.i]
	}
	return 0
}

// open consumes the '{' or '[' of the value at the cursor.
func (w *walker) open() {
	w.ws()
	w.i++
}

// more reports whether the object or array being walked has another member,
// consuming the comma before it or the bracket that closes the value.
func (w *walker) more() bool {
	w.ws()
	switch w.b[w.i] {
	case '}', ']':
		w.i++
		return false
	case ',':
		w.i++
	}
	return true
}

// str consumes a string and returns its contents between the quotes, still
// escaped. In a valid string a backslash only starts an escape, so a quote
// ends the string unless an odd run of backslashes precedes it; that lets
// bytes.IndexByte, which is vectorised, do the search.
func (w *walker) str() []byte {
	w.ws()
	start := w.i + 1
	j := start
	for {
		q := bytes.IndexByte(w.b[j:], '"')
		if q < 0 { // unreachable on a valid text, where it would otherwise loop
			w.i = len(w.b)
			return w.b[start:]
		}
		j += q
		// A quote ends the string unless an odd run of backslashes escapes
		// it; the rest of a \uXXXX is hex digits, never a quote.
		k := j
		for k > start && w.b[k-1] == '\\' {
			k--
		}
		if (j-k)%2 == 0 {
			w.i = j + 1
			return w.b[start:j]
		}
		j++
	}
}

// key consumes a member name and the colon after it, and returns the name
// unescaped.
func (w *walker) key() []byte {
	k := w.str()
	w.ws()
	w.i++
	if bytes.IndexByte(k, '\\') >= 0 {
		return []byte(unescape(k))
	}
	return k
}

// skip consumes one value of any kind and returns its raw bytes.
func (w *walker) skip() []byte {
	w.ws()
	start := w.i
	switch w.b[w.i] {
	case '"':
		w.str()
	case '{', '[':
		depth := 0
		for {
			switch w.b[w.i] {
			case '"':
				// Strings are skipped whole, so a bracket inside one never
				// counts toward the depth.
				w.str()
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					w.i++
					return w.b[start:w.i]
				}
			}
			w.i++
		}
	default:
		for w.i < len(w.b) {
			switch w.b[w.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return w.b[start:w.i]
			}
			w.i++
		}
	}
	return w.b[start:w.i]
}

// text consumes a string value and returns it decoded, or consumes any other
// value and reports ok=false.
func (w *walker) text() (s string, ok bool) {
	if w.peek() != '"' {
		w.skip()
		return "", false
	}
	raw := w.str()
	if bytes.IndexByte(raw, '\\') >= 0 {
		return unescape(raw), true
	}
	return intern(raw), true
}

// length consumes a value and returns JavaScript's .length of it as pi
// adds it up: a string's length in UTF-16 code units, an array's number of
// elements; any other value 0 (pi's .length is undefined there, and its sum
// NaN: see the package doc's caveat).
func (w *walker) length() int64 {
	switch w.peek() {
	case '"':
		return literalUnits(w.str())
	case '[':
		var n int64
		w.open()
		for w.more() {
			w.skip()
			n++
		}
		return n
	}
	w.skip()
	return 0
}

// number consumes a number value and returns it, or consumes any other value
// and reports ok=false.
func (w *walker) number() (f float64, ok bool) {
	c := w.peek()
	if c != '-' && (c < '0' || c > '9') {
		w.skip()
		return 0, false
	}
	// A valid JSON number is always accepted by ParseFloat; one out of
	// float64 range comes back as ±Inf with an error, which JSON.parse also
	// reads as Infinity.
	f, _ = strconv.ParseFloat(string(w.skip()), 64)
	return f, true
}

// jsString returns the string whose JSON contents (between the quotes,
// still escaped) are raw, as the JavaScript string pi compares, written so
// that two are equal exactly when pi's are: each ill-formed UTF-8 sequence
// is U+FFFD, as Node decodes it (a\xff and a\xfe are one id to pi), and
// an escaped surrogate is that code unit, a pair the character it makes,
// a lone one written as its three WTF-8 bytes (\ud800 is neither \udc00
// nor U+FFFD to pi). unescape, through encoding/json, makes every lone
// surrogate U+FFFD, and raw bytes would tell apart what Node decodes alike.
func jsString(raw []byte) string { return decodeJS(raw, true) }

// jsText is jsString for a string that must be UTF-8 (a model's name): a
// lone surrogate, which pi holds and UTF-8 cannot, reads U+FFFD, as
// encoding/json writes it.
func jsText(raw []byte) string { return decodeJS(raw, false) }

func decodeJS(raw []byte, wtf8 bool) string {
	if bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		return intern(raw)
	}
	b := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); {
		c := raw[i]
		switch {
		case c == '\\' && raw[i+1] == 'u':
			v := hex4(raw[i+2:])
			i += 6
			if utf16.IsSurrogate(v) && v < 0xDC00 && i+6 <= len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
				if r := utf16.DecodeRune(v, hex4(raw[i+2:])); r != utf8.RuneError {
					b = utf8.AppendRune(b, r)
					i += 6
					continue
				}
			}
			if utf16.IsSurrogate(v) && wtf8 {
				b = append(b, byte(0xE0|v>>12), byte(0x80|v>>6&0x3F), byte(0x80|v&0x3F))
				continue
			}
			b = utf8.AppendRune(b, v)
		case c == '\\':
			b = append(b, escaped[raw[i+1]])
			i += 2
		default:
			size, ok := jsstr.DecodeStep(raw[i:])
			if ok {
				b = append(b, raw[i:i+size]...)
			} else {
				b = utf8.AppendRune(b, utf8.RuneError)
			}
			i += size
		}
	}
	return string(b)
}

// escaped is the byte a two-character escape stands for.
var escaped = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// unescape decodes the contents of a JSON string that contains escapes.
func unescape(raw []byte) string {
	q := make([]byte, 0, len(raw)+2)
	q = append(q, '"')
	q = append(q, raw...)
	q = append(q, '"')
	var s string
	_ = json.Unmarshal(q, &s) // valid by construction: the line passed valid
	return s
}

// intern returns the constant string for values that occur on most lines,
// so they cost no allocation.
func intern(raw []byte) string {
	switch string(raw) {
	case "message":
		return "message"
	case "assistant":
		return "assistant"
	case "user":
		return "user"
	case "toolResult":
		return "toolResult"
	case "toolUse":
		return "toolUse"
	case "stop":
		return "stop"
	case "compaction":
		return "compaction"
	case "session":
		return "session"
	}
	return string(raw)
}
