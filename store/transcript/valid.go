package transcript

import (
	"encoding/binary"
	"math/bits"
)

// valid reports whether b is one JSON text, judged as JSON.parse judges
// the text Node decodes from it, which is encoding/json.Valid's verdict
// but for depth (FuzzValidMatchesEncodingJSON holds it to that): RFC
// 8259's grammar, with encoding/json's two liberties. Inside a string any
// byte from 0x20 up is taken as is, so invalid UTF-8 passes (JSON.parse
// sees U+FFFD there, which it accepts too); a \u escape may name half a
// surrogate pair. Objects and arrays nest to any depth, as JSON.parse lets
// them (json.Valid stops at 10000). Whitespace is space, tab, CR and LF
// only, before and after the value as between tokens.
//
// It exists because json.Valid steps a state machine once per byte, which
// cost 55-65% of a transcript scan; here the bytes of a string's contents,
// which are most of a transcript, are passed over eight at a time.
func valid(b []byte) bool {
	var open nesting
	i := skipSpace(b, 0)
	for {
		// At the start of a value.
		if i >= len(b) {
			return false
		}
		switch c := b[i]; {
		case c == '{' || c == '[':
			open.push(c == '{')
			i = skipSpace(b, i+1)
			if i < len(b) && b[i] == c+2 { // '{'+2 is '}', '['+2 is ']': empty
				open.depth--
				i++
				break
			}
			if c == '{' {
				if i = endKey(b, i); i < 0 {
					return false
				}
			}
			continue
		case c == '"':
			i = endString(b, i)
		case c == '-' || c >= '0' && c <= '9':
			i = endNumber(b, i)
		case c == 't':
			i = endLiteral(b, i, "true")
		case c == 'f':
			i = endLiteral(b, i, "false")
		case c == 'n':
			i = endLiteral(b, i, "null")
		default:
			return false
		}
		if i < 0 {
			return false
		}
		// After a value: close containers until one takes another member.
		for {
			i = skipSpace(b, i)
			if open.depth == 0 {
				return i == len(b)
			}
			if i >= len(b) {
				return false
			}
			object := open.inObject()
			if c := b[i]; object && c == '}' || !object && c == ']' {
				open.depth--
				i++
				continue
			} else if c != ',' {
				return false
			}
			i = skipSpace(b, i+1)
			if object {
				if i = endKey(b, i); i < 0 {
					return false
				}
			}
			break
		}
	}
}

// nesting is the stack of open containers: a bit each, set for an object.
// The first maxDepth or so fit in place; deeper ones, which only a
// hand-made line has, spill into deep.
type nesting struct {
	depth   int
	objects [maxDepth/64 + 1]uint64
	deep    []uint64
}

// maxDepth is encoding/json's maxNestingDepth: the 10001st open bracket
// makes json.Valid fail. JSON.parse has no such limit (V8's parser is
// iterative), and pi keeps a line of any depth, so valid has none either.
const maxDepth = 10000

// push opens a container. A line's depth is bounded by its length, at most
// MaxLineBytes, so deep holds at most 1 MiB.
func (n *nesting) push(object bool) {
	d := n.depth
	n.depth++
	var word *uint64
	if i := d / 64; i < len(n.objects) {
		word = &n.objects[i]
	} else {
		if i -= len(n.objects); i == len(n.deep) {
			n.deep = append(n.deep, 0)
		}
		word = &n.deep[i]
	}
	bit := uint64(1) << (d % 64)
	*word &^= bit
	if object {
		*word |= bit
	}
}

// inObject reports whether the innermost open container is an object.
func (n *nesting) inObject() bool {
	d := n.depth - 1
	if d/64 < len(n.objects) {
		return n.objects[d/64]>>(d%64)&1 != 0
	}
	return n.deep[d/64-len(n.objects)]>>(d%64)&1 != 0
}

// endKey checks an object member's name and colon starting at b[i] and
// returns the index of its value, or -1.
func endKey(b []byte, i int) int {
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	if i = endString(b, i); i < 0 {
		return -1
	}
	if i = skipSpace(b, i); i >= len(b) || b[i] != ':' {
		return -1
	}
	return skipSpace(b, i+1)
}

// skipSpace returns the index of the first byte at or after i that is not
// JSON whitespace.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// endLiteral checks that b[i:] starts with word and returns the index after it,
// or -1.
func endLiteral(b []byte, i int, word string) int {
	if len(b)-i < len(word) || string(b[i:i+len(word)]) != word {
		return -1
	}
	return i + len(word)
}

// endNumber checks the number starting at b[i] and returns the index after it,
// or -1: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?. What follows is the
// caller's to judge, so "01" is the number 0 followed by a stray "1".
func endNumber(b []byte, i int) int {
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(b, i+1)
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		if i+1 >= len(b) || b[i+1] < '0' || b[i+1] > '9' {
			return -1
		}
		i = digits(b, i+1)
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return -1
		}
		i = digits(b, i+1)
	}
	return i
}

func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// endString checks the string whose opening quote is b[i] and returns the index
// after its closing quote, or -1. Bytes below 0x20 must be escaped; an
// escape is one of \" \\ \/ \b \f \n \r \t or \u and four hex digits.
func endString(b []byte, i int) int {
	i++
	for {
		// Ordinary contents, eight bytes at a time (a transcript is mostly
		// the contents of strings), then byte by byte near the end of b.
		for ; i+8 <= len(b); i += 8 {
			w := binary.LittleEndian.Uint64(b[i:])
			if m := below(w, 0x20) | zeroByte(w^(ones*'"')) | zeroByte(w^(ones*'\\')); m != 0 {
				i += bits.TrailingZeros64(m) / 8
				break
			}
		}
		for i < len(b) && b[i] >= 0x20 && b[i] != '"' && b[i] != '\\' {
			i++
		}
		if i >= len(b) {
			return -1
		}
		switch b[i] {
		case '"':
			return i + 1
		case '\\':
			if i+1 >= len(b) {
				return -1
			}
			switch e := escape[b[i+1]]; {
			case e == 2:
				i += 2
			case e == 6 && len(b)-i >= 6 && hex[b[i+2]] && hex[b[i+3]] && hex[b[i+4]] && hex[b[i+5]]:
				i += 6
			default:
				return -1
			}
		default: // a control byte
			return -1
		}
	}
}

// escape is the length of the escape that starts with a backslash and the
// byte indexed, or 0 where that byte makes no escape.
var escape = [256]uint8{'"': 2, '\\': 2, '/': 2, 'b': 2, 'f': 2, 'n': 2, 'r': 2, 't': 2, 'u': 6}

// The word tests below flag a byte by setting its high bit, reading the
// word little-endian so that its lowest byte comes first. A subtraction's
// first borrow comes out of a rightly flagged byte, so a wrong flag can only
// sit above (later than) a right one: the lowest flag, which is all that
// endString and the unit counters use, is always right.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// zeroByte flags the zero bytes of w.
func zeroByte(w uint64) uint64 { return (w - ones) & ^w & highs }

// below flags the bytes of w below n, for n <= 0x80.
func below(w uint64, n byte) uint64 { return (w - ones*uint64(n)) & ^w & highs }

// hex tells the bytes that are hexadecimal digits.
var hex = [256]bool{
	'0': true, '1': true, '2': true, '3': true, '4': true, '5': true, '6': true, '7': true, '8': true, '9': true,
	'a': true, 'b': true, 'c': true, 'd': true, 'e': true, 'f': true,
	'A': true, 'B': true, 'C': true, 'D': true, 'E': true, 'F': true,
}
