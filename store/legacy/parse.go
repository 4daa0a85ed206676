package legacy

import (
	"math"
	"strconv"

	"sessdb/gates"
)

// jsUint reads s as the legacy reader read every integer: it is accepted
// only if String(Number.parseInt(s, 10)) === s, which refuses signs, leading
// zeros, spaces, fractions, exponents and trailing text, and, for large
// values, any decimal that is not exactly how JavaScript prints the double it
// rounds to. Only non-negative values are reported (callers reject negative
// ones anyway, and "-0" does not round-trip). A value beyond uint64 that JS
// still accepts saturates, so comparisons against any uint64 bound agree.
func jsUint(s string) (v uint64, ok bool) {
	if s == "0" {
		return 0, true
	}
	// JS prints integers from 1e21 up in exponent form, so no digit string
	// longer than 21 can equal String(n).
	if len(s) == 0 || len(s) > 21 || s[0] < '1' || s[0] > '9' {
		return 0, false
	}
	for i := 1; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	// Below 1e15 every integer is an exact double and prints as itself.
	// Above it, round-trip through the nearest double: Go's shortest 'f'
	// formatting and JS's Number::toString pick the same digits (shortest
	// that round-trips, closest on ties), and both pad with zeros below 1e21.
	if len(s) > 15 {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || strconv.FormatFloat(f, 'f', -1, 64) != s {
			return 0, false
		}
	}
	// The decimal's own value, not the double's: distinct accepted strings
	// are distinct doubles in the same order, so comparisons agree with JS.
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return math.MaxUint64, true
	}
	return v, true
}

// ParseResumeChain is the legacy counter rule applied to a sidecar value
// already trimmed (ReadSidecar trims, so a file holding " 3 " is 3): the
// value if String(parseInt(s)) === s and it is > 0, else 0. "007", "-4",
// "3.5", "abc", "" and " 3 " itself are all 0, a chain nobody can be refused
// on, which is the gate's fail-open polarity. Pure; never panics.
func ParseResumeChain(s string) uint64 {
	v, ok := jsUint(s)
	if !ok {
		return 0
	}
	return v
}

// ParseContext is the legacy context rule applied to a trimmed sidecar
// value: split on runs of JavaScript whitespace; the first two fields must
// each round-trip as JS integers with tokens >= 0 and window > 0; the third,
// if any, is the model stamp exactly as written (never lowercased: the legacy
// writer lowercased, its reader did not, and the comparison must not change at
// the cutover). Fields after the third are ignored, as the legacy reader's
// destructuring ignored them. ok is false for "no measurement".
//
// Readings beyond int64 (which JS would accept up to 1e21) saturate at
// math.MaxInt64; no real window comes near, and it keeps a parse from
// wrapping into a small number. Fed an untrimmed string, a trailing blank
// yields an empty third field, which here means unstamped, where JS would
// have kept it as a stamp matching no named model; ReadContext never does.
func ParseContext(s string) (gates.Context, bool) {
	f := jsSplitSpace(s)
	if len(f) < 2 {
		return gates.Context{}, false
	}
	tokens, ok1 := jsUint(f[0])
	window, ok2 := jsUint(f[1])
	if !ok1 || !ok2 || window == 0 {
		return gates.Context{}, false
	}
	c := gates.Context{Tokens: clampInt64(tokens), Window: clampInt64(window)}
	if len(f) > 2 {
		c.Model = f[2]
	}
	return c, true
}

func clampInt64(v uint64) int64 {
	if v > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(v)
}

// ModelIdentity is the legacy modelIdentity: "provider/model" lowercased,
// kept only if it matches ^[a-z0-9][a-z0-9._:/-]{0,127}$; "" (no identity)
// when either part is empty or the result falls outside the charset. The
// charset keeps the stamp a single whitespace-free field of the context
// sidecar.
func ModelIdentity(provider, model string) string {
	if provider == "" || model == "" {
		return ""
	}
	return normaliseID(provider + "/" + model)
}

// NormaliseModel applies ModelIdentity's rule to an already joined
// "provider/id" (the CLI's --model). A string with no "/" between two
// non-empty halves is no identity, since ModelIdentity could never have
// produced it.
func NormaliseModel(id string) string {
	for i := 1; i < len(id)-1; i++ {
		if id[i] == '/' {
			return normaliseID(id)
		}
	}
	return ""
}

// normaliseID lowercases as JS's toLowerCase would for any string that can
// pass the charset: of all code points outside ASCII, only the Kelvin sign
// (U+212A) lowercases into ASCII ("k"). Go's simple case mapping would also
// turn U+0130 into "i", where JS gives "i" plus a combining dot that fails the
// charset, so every other non-ASCII rune is refused outright.
func normaliseID(id string) string {
	b := make([]byte, 0, len(id))
	for _, r := range id {
		switch {
		case r >= 'A' && r <= 'Z':
			r += 'a' - 'A'
		case r == '\u212A':
			r = 'k'
		case r >= 0x80:
			return ""
		}
		b = append(b, byte(r))
	}
	if len(b) == 0 || len(b) > 128 || !isAlnum(b[0]) {
		return ""
	}
	for _, c := range b[1:] {
		if !isAlnum(c) && c != '.' && c != '_' && c != ':' && c != '/' && c != '-' {
			return ""
		}
	}
	return string(b)
}

func isAlnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }
