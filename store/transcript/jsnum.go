package transcript

import (
	"math"
	"math/big"
	"strconv"
	"strings"

	"sessdb/internal/jsstr"
)

// jsNumber consumes a JSON value and returns JavaScript's ToNumber of it,
// as a relational comparison such as pi's `version < 2` coerces it: a
// number is itself, true 1, false and null 0, a string is read by
// StringToNumber, an array goes through its string form (Array.prototype.join
// with ","), and an object reads "[object Object]", which is NaN. NaN
// compares false with everything.
//
// An object with its own "toString" member (JSON.parse makes it a plain
// value, not a function) makes the coercion throw a TypeError, and pi
// fails to load the file; it reads NaN here, and toPrimitiveThrows tells
// it.
func jsNumber(w *walker) float64 {
	switch w.peek() {
	case '"':
		s, _ := w.text()
		return stringToNumber(s)
	case 't':
		w.skip()
		return 1
	case 'f', 'n':
		w.skip()
		return 0
	case '{':
		w.skip()
		return math.NaN()
	case '[':
		return arrayNumber(w)
	}
	f, _ := w.number()
	return f
}

// arrayNumber consumes an array and returns ToNumber of its join(","):
// no element reads "" (0); two or more put a comma in the string (NaN); one
// element is its ToString, which for null is "", for a nested array its own
// join, for a boolean "true" or "false" (NaN), for an object
// "[object Object]" (NaN), and for a number a string that reads back as the
// same number. Past maxDepth nested arrays it gives up with NaN: V8's join
// recurses, and overflows its stack (a RangeError) before that depth.
func arrayNumber(w *walker) float64 { return arrayNumberAt(w, 0) }

func arrayNumberAt(w *walker, depth int) float64 {
	if depth > maxDepth {
		w.skip()
		return math.NaN()
	}
	w.open()
	n, v := 0, 0.0
	for w.more() {
		n++
		if n > 1 {
			w.skip()
			continue
		}
		switch w.peek() {
		case '"':
			s, _ := w.text()
			v = stringToNumber(s)
		case 'n':
			w.skip()
			v = 0
		case 't', 'f', '{':
			w.skip()
			v = math.NaN()
		case '[':
			v = arrayNumberAt(w, depth+1)
		default:
			v, _ = w.number()
		}
	}
	if n > 1 {
		return math.NaN()
	}
	return v
}

// stringToNumber is ECMAScript's StringToNumber: surrounding whitespace and
// line terminators trimmed, "" is 0, then a decimal literal (an optional
// sign, digits with an optional fraction, or a fraction alone, and an
// optional exponent), "Infinity" with an optional sign, or an unsigned
// 0x, 0o or 0b integer; anything else (no numeric separators, no "inf" or
// "nan", no sign before 0x) is NaN.
func stringToNumber(s string) float64 {
	s = strings.TrimFunc(s, jsstr.IsSpace)
	if s == "" {
		return 0
	}
	if len(s) > 2 && s[0] == '0' {
		base := 0
		switch s[1] {
		case 'x', 'X':
			base = 16
		case 'o', 'O':
			base = 8
		case 'b', 'B':
			base = 2
		}
		if base != 0 {
			return radixNumber(s[2:], base)
		}
	}
	body := s
	if body[0] == '+' || body[0] == '-' {
		body = body[1:]
	}
	if body == "Infinity" {
		if s[0] == '-' {
			return math.Inf(-1)
		}
		return math.Inf(1)
	}
	if !decimalLiteral(body) {
		return math.NaN()
	}
	// The syntax is one ParseFloat accepts; out of range it returns ±Inf
	// or 0 with an error, the values JavaScript gives.
	f, _ := strconv.ParseFloat(s, 64)
	return f
}

// decimalLiteral reports whether s is an unsigned StrUnsignedDecimalLiteral
// other than Infinity: digits, "." and digits (either side may be empty, not
// both), then optionally e or E, a sign and digits.
func decimalLiteral(s string) bool {
	i, digits := 0, 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
		digits++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			digits++
		}
	}
	if digits == 0 {
		return false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == start {
			return false
		}
	}
	return i == len(s)
}

// radixNumber reads the digits of a 0x, 0o or 0b literal as JavaScript
// does: every character a digit of base, at least one, and the value
// rounded to the nearest float64.
func radixNumber(digits string, base int) float64 {
	for i := 0; i < len(digits); i++ {
		c := digits[i]
		var d int
		switch {
		case c >= '0' && c <= '9':
			d = int(c - '0')
		case c >= 'a' && c <= 'f':
			d = int(c-'a') + 10
		case c >= 'A' && c <= 'F':
			d = int(c-'A') + 10
		default:
			return math.NaN()
		}
		if d >= base {
			return math.NaN()
		}
	}
	n, ok := new(big.Int).SetString(digits, base)
	if !ok {
		return math.NaN()
	}
	f, _ := new(big.Float).SetInt(n).Float64()
	return f
}

// toPrimitiveThrows reports whether JavaScript's ToPrimitive of the valid
// JSON value raw throws, as pi's comparison of a header version does: an
// object with its own "toString" member (a plain value, not a function:
// its inherited valueOf gives no primitive either) throws a TypeError, and
// so does an array holding one at any depth, as its join converts every
// element. Other objects read "[object Object]"; other values do not throw.
// Past maxDepth nested arrays it says no, as arrayNumber gives up there.
func toPrimitiveThrows(raw []byte) bool {
	w := walker{b: raw}
	return primitiveThrowsAt(&w, 0)
}

func primitiveThrowsAt(w *walker, depth int) bool {
	switch w.peek() {
	case '{':
		w.open()
		for w.more() {
			if string(w.key()) == "toString" {
				return true
			}
			w.skip()
		}
	case '[':
		if depth > maxDepth {
			return false
		}
		w.open()
		for w.more() {
			if primitiveThrowsAt(w, depth+1) {
				return true
			}
		}
	default:
		w.skip()
	}
	return false
}
