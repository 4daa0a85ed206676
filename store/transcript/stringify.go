package transcript

import (
	"bytes"
	"math"
	"strconv"
	"unicode/utf8"
)

// stringifier holds the members of the objects being measured, innermost
// last, to find repeated keys. A Scanner keeps one, so that its slices are
// allocated once per file rather than per tool call.
type stringifier struct {
	keys [][]byte
	lens []int64
	deep bool // the last value measured nests past stringifyDepth
}

// stringifyDepth is the number of nested arrays and objects past which
// pi's JSON.stringify may
// overflow its stack (a RangeError, which leaves pi no estimate): node 20,
// with its default stack, throws from 4,174 nested arrays or objects called
// bare (4,173 pass), and through pi's own estimate, some frames deeper,
// from between 4,100 and 4,150 (node 20.20.2). Past it, no count is pi's.
const stringifyDepth = 3000

// units is stringifyUnits with s's slices. s.deep tells whether the value
// nests past stringifyDepth, where pi may have no count.
func (s *stringifier) units(raw []byte) int64 {
	s.keys, s.lens, s.deep = s.keys[:0], s.lens[:0], false
	return s.value(&walker{b: raw}, 0)
}

func (s *stringifier) value(w *walker, depth int) int64 {
	if c := w.peek(); depth >= stringifyDepth && (c == '{' || c == '[') {
		// pi's JSON.stringify recurses too, and may overflow its stack
		// here, which valid does not bound: there is no pi figure to
		// match, only a stack of ours to keep.
		s.deep = true
		w.skip()
		return 0
	}
	switch w.peek() {
	case '"':
		return quotedUnits(w.str())
	case '{':
		return s.object(w, depth)
	case '[':
		w.open()
		n := int64(2)
		for first := true; w.more(); first = false {
			if !first {
				n++ // the comma
			}
			n += s.value(w, depth+1)
		}
		return n
	case 't', 'n':
		w.skip()
		return 4
	case 'f':
		w.skip()
		return 5
	}
	f, _ := w.number()
	return numberUnits(f)
}

// manyKeys is where an object's repeated keys are looked up in a map
// rather than by a scan of the keys before.
const manyKeys = 32

func (s *stringifier) object(w *walker, depth int) int64 {
	w.open()
	base := len(s.keys)
	var index map[string]int
	for w.more() {
		raw := w.str()
		w.ws()
		w.i++ // the colon
		key := raw
		if bytes.IndexByte(raw, '\\') >= 0 || !utf8.Valid(raw) {
			key = []byte(jsString(raw)) // the key as pi's object holds it
		}
		member := quotedUnits(raw) + 1 + s.value(w, depth+1)
		at := -1
		if index != nil {
			if i, ok := index[string(key)]; ok {
				at = i
			}
		} else {
			for i := base; i < len(s.keys); i++ {
				if bytes.Equal(s.keys[i], key) {
					at = i
					break
				}
			}
		}
		if at >= 0 {
			s.lens[at] = member // the first place, the last value
			continue
		}
		s.keys, s.lens = append(s.keys, key), append(s.lens, member)
		if index == nil && len(s.keys)-base > manyKeys {
			index = make(map[string]int, 2*manyKeys)
			for i := base; i < len(s.keys); i++ {
				index[string(s.keys[i])] = i
			}
		} else if index != nil {
			index[string(key)] = len(s.keys) - 1
		}
	}
	n := int64(2)
	for i := base; i < len(s.lens); i++ {
		if i > base {
			n++ // the comma
		}
		n += s.lens[i]
	}
	s.keys, s.lens = s.keys[:base], s.lens[:base]
	return n
}

// quotedUnits is the length of JSON.stringify of the string whose contents,
// still escaped as in the JSON text, are raw: its quotes, then each UTF-16
// unit of the string, `"`, `\`, backspace, form feed, newline, carriage
// return and tab as two-character escapes, the other control characters and
// the lone surrogates as \uXXXX.
func quotedUnits(raw []byte) int64 {
	n := int64(2)
	for i := 0; i < len(raw); {
		j := asciiRun(raw, i, '\\')
		n += int64(j - i) // in a valid string, raw ASCII is never `"` or a control character
		if i = j; i >= len(raw) {
			break
		}
		if raw[i] != '\\' {
			units, size := decodeUnits(raw[i:])
			n += int64(units)
			i += size
			continue
		}
		switch raw[i+1] {
		case '/':
			n++
			i += 2
		case 'u':
			v := hex4(raw[i+2:])
			i += 6
			switch {
			case v == '"' || v == '\\' || v == '\b' || v == '\f' || v == '\n' || v == '\r' || v == '\t':
				n += 2
			case v < 0x20:
				n += 6
			case v >= 0xD800 && v <= 0xDBFF:
				if i+6 <= len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
					if lo := hex4(raw[i+2:]); lo >= 0xDC00 && lo <= 0xDFFF {
						n += 2 // a pair: one character, written as is
						i += 6
						continue
					}
				}
				n += 6
			case v >= 0xDC00 && v <= 0xDFFF:
				n += 6
			default:
				n++
			}
		default: // \" \\ \b \f \n \r \t
			n += 2
			i += 2
		}
	}
	return n
}

// hex4 reads the four hex digits of a \u escape.
func hex4(b []byte) rune {
	var v rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		default:
			c -= 'A' - 10
		}
		v = v<<4 | rune(c)
	}
	return v
}

// numberUnits is the length of JavaScript's Number::toString(f), which
// JSON.stringify writes for a finite number ("null" for an infinite one):
// the shortest digits that read back as f, k of them with the decimal
// point after n, written as digits and zeros when k <= n <= 21, with a
// point inside when 0 < n <= 21, as "0." and zeros when -6 < n <= 0, and
// otherwise as d[.ddd]e±x.
func numberUnits(f float64) int64 {
	switch {
	case math.IsInf(f, 0):
		return 4
	case f == 0:
		return 1 // -0 too
	}
	var sign int64
	if f < 0 {
		sign, f = 1, -f
	}
	var buf [32]byte
	e := strconv.AppendFloat(buf[:0], f, 'e', -1, 64) // d[.ddd]e±xx
	at := bytes.IndexByte(e, 'e')
	k := int64(at)
	if at > 1 {
		k-- // the point
	}
	exp, _ := strconv.Atoi(string(e[at+1:]))
	n := int64(exp) + 1
	switch {
	case k <= n && n <= 21:
		return sign + n
	case 0 < n && n <= 21:
		return sign + k + 1
	case -6 < n && n <= 0:
		return sign + 2 - n + k
	}
	digits := int64(len(strconv.Itoa(int(abs(n - 1)))))
	if k == 1 {
		return sign + 3 + digits // de±x
	}
	return sign + k + 3 + digits // d.ddde±x
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}
