package legacy

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"sessdb/gates"

	"sessdb/internal/jsstr"
)

// Expected values marked "node" were computed by running the legacy
// expressions (String(parseInt(x)) === x, x.trim(), x.split(/\s+/),
// Buffer.toString("utf8"), modelIdentity) under Node v20, not derived from
// this package, so these tables can catch a wrong reading of JS.

func TestParseResumeChain(t *testing.T) {
	cases := []struct {
		in   string
		want uint64
	}{
		{"1", 1}, {"3", 3}, {"40", 40},
		// legacy 26 and the odd values.
		{"0", 0}, {"", 0}, {"007", 0}, {"03", 0}, {"-4", 0}, {"3.5", 0}, {"3.0", 0},
		{"abc", 0}, {"3abc", 0}, {"+3", 0}, {"1e3", 0}, {"0x10", 0}, {"-0", 0},
		// Untrimmed input is not a counter: ReadSidecar trims first.
		{" 3 ", 0}, {"3 ", 0}, {"3\n", 0},
		// Digits JS's parseInt does not read.
		{"٣", 0}, {"１", 0},
		// node: large values round-trip only as JS prints their double.
		{"9007199254740992", 9007199254740992},
		{"9007199254740993", 0},
		{"9223372036854775807", 0},
		{"9223372036854776000", 9223372036854776000},
		{"1234567890123456789", 0},
		{"1234567890123456800", 1234567890123456800},
		{"18446744073709551615", 0},
		{"18446744073709551616", 0},
		{"18446744073709552000", math.MaxUint64}, // accepted by JS, beyond uint64
		{"100000000000000000000", math.MaxUint64},
		{"123456789012345680000", math.MaxUint64},
		{"123456789012345678901", 0},
		{"99999999999999999999", 0},
		{"999999999999999999999", 0},
		{"1000000000000000000000", 0}, // JS prints 1e+21
	}
	for _, c := range cases {
		if got := ParseResumeChain(c.in); got != c.want {
			t.Errorf("ParseResumeChain(%q) = %d, want %d", c.in, got, c.want)
		}
	}
}

// Every byte beside a digit, before it, after it or between two, and
// every byte alone: a counter is made of ASCII digits only, the first
// not 0 (String(parseInt(s, 10)) === s), so each of these reads as the
// number it spells or as 0. The bytes either side of '0'..'9' ('/' and
// ':') are where a range check drawn one wide would take a non-digit.
func TestACounterIsDigitsAlone(t *testing.T) {
	for b := 0; b < 256; b++ {
		c := string(rune(b))
		if b >= 0x80 {
			c = string([]byte{byte(b)})
		}
		digit := b >= '0' && b <= '9'
		for _, s := range []string{c, c + "1", "1" + c, "1" + c + "1", "9" + c + "9", "123456789012345" + c} {
			var want uint64
			if digit && !(b == '0' && s[0] == '0') {
				want, _ = strconv.ParseUint(s, 10, 64)
			}
			if got := ParseResumeChain(s); got != want {
				t.Errorf("ParseResumeChain(%q) = %d, want %d", s, got, want)
			}
		}
	}
}

func TestParseContext(t *testing.T) {
	ctx := func(tokens, window int64, m string) *gates.Context {
		return &gates.Context{Tokens: tokens, Window: window, Model: m}
	}
	cases := []struct {
		in   string
		want *gates.Context // nil: no measurement
	}{
		{"12345 200000", ctx(12345, 200000, "")},
		{"160000 200000 anthropic/claude-sonnet-4", ctx(160000, 200000, "anthropic/claude-sonnet-4")},
		{"0 1", ctx(0, 1, "")},
		// The stamp is kept as written; the legacy reader never lowercased it.
		{"1 2 Anthropic/Claude", ctx(1, 2, "Anthropic/Claude")},
		// node: any run of JS whitespace separates, a 4th field is ignored.
		{"1\t2", ctx(1, 2, "")},
		{"1  2 m x", ctx(1, 2, "m")},
		{"1\u20282\u3000M/X", ctx(1, 2, "M/X")},
		{"1\u00a02", ctx(1, 2, "")},
		{"1\u00852", nil}, // NEL is not JS whitespace
		// legacy 30: no measurement.
		{"", nil}, {"5", nil}, {"abc def", nil}, {"0 0", nil}, {"5 0", nil},
		{"-1 5", nil}, {"5 -1", nil}, {"1.5 2", nil}, {"1 2.0", nil}, {"1 2x", nil},
		{"01 2", nil}, {"1 02", nil}, {"1e3 2", nil}, {"+1 2", nil}, {" 1 2", nil},
		// Beyond int64, still accepted by JS: saturated, not wrapped.
		{"100000000000000000000 200000000000000000000", ctx(math.MaxInt64, math.MaxInt64, "")},
		{"9223372036854776000 9223372036854775807", nil}, // the window does not round-trip
		// node: nor do the tokens, which are then no reading, never 0.
		{"9007199254740993 200000", nil}, {"1234567890123456789 200000 a/b", nil},
	}
	for _, c := range cases {
		got, ok := ParseContext(c.in)
		switch {
		case c.want == nil && ok:
			t.Errorf("ParseContext(%q) = %+v, want no measurement", c.in, got)
		case c.want != nil && (!ok || got != *c.want):
			t.Errorf("ParseContext(%q) = %+v, %v; want %+v", c.in, got, ok, *c.want)
		}
	}
}

func TestModelIdentity(t *testing.T) {
	cases := []struct{ provider, model, want string }{
		{"Anthropic", "Claude-Sonnet-4", "anthropic/claude-sonnet-4"},
		{"A_B", "c:d.e/f-g", "a_b/c:d.e/f-g"},
		{"", "x", ""}, {"x", "", ""},
		{"a", "b c", ""}, {"-a", "b", ""}, {"a", "é", ""}, {"ß", "x", ""},
		// node: the Kelvin sign lowercases to ASCII k; U+0130 lowercases to
		// "i" plus a combining dot, which fails the charset.
		{"\u212Aimi", "K2", "kimi/k2"},
		{"\u0130nc", "x", ""},
		{strings.Repeat("x", 63), strings.Repeat("y", 64), strings.Repeat("x", 63) + "/" + strings.Repeat("y", 64)},
		{strings.Repeat("x", 64), strings.Repeat("y", 64), ""},
		{"a\xffb", "c", ""},
	}
	for _, c := range cases {
		if got := ModelIdentity(c.provider, c.model); got != c.want {
			t.Errorf("ModelIdentity(%q, %q) = %q, want %q", c.provider, c.model, got, c.want)
		}
	}
}

func TestNormaliseModel(t *testing.T) {
	cases := []struct{ in, want string }{
		{"Anthropic/Claude-Sonnet-4", "anthropic/claude-sonnet-4"},
		{"openai/gpt-5", "openai/gpt-5"},
		{"a//", "a//"}, // provider "a", model "/"
		{"a/\u212A", "a/k"},
		{"", ""}, {"gpt-5", ""}, {"a/", ""}, {"/a", ""}, {"/", ""},
		{"a b/c", ""}, {"a/b c", ""},
	}
	for _, c := range cases {
		if got := NormaliseModel(c.in); got != c.want {
			t.Errorf("NormaliseModel(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	// Same rule both ways in: joining then normalising is ModelIdentity.
	for _, p := range [][2]string{{"Anthropic", "Claude"}, {"x", "y/z"}, {"\u212A", "v"}, {"a", "b c"}} {
		if a, b := ModelIdentity(p[0], p[1]), NormaliseModel(p[0]+"/"+p[1]); a != b {
			t.Errorf("ModelIdentity%q = %q but NormaliseModel = %q", p, a, b)
		}
	}
}

// ModelIdentity and NormaliseModel keep exactly what the legacy charset
// ^[a-z0-9][a-z0-9._:/-]{0,127}$ matches after lowercasing, for every
// ASCII byte first and later in either half: a byte let through is a
// stamp the legacy writer would not have written (a model change missed
// at the cutover), a byte refused an identity lost (every reading then
// unstamped).
func TestModelIdentityKeepsTheLegacyCharset(t *testing.T) {
	charset := regexp.MustCompile(`^[a-z0-9][a-z0-9._:/-]{0,127}$`)
	for b := 0; b < 0x80; b++ {
		c := string(rune(b))
		for _, p := range [][2]string{{c, "m"}, {c + "p", "m"}, {"p" + c, "m"}, {"p", c}, {"p", "m" + c}} {
			joined := strings.ToLower(p[0] + "/" + p[1]) // ASCII: JS's toLowerCase
			want := ""
			if charset.MatchString(joined) {
				want = joined
			}
			if got := ModelIdentity(p[0], p[1]); got != want {
				t.Errorf("ModelIdentity(%q, %q) = %q, want %q", p[0], p[1], got, want)
			}
			if got := NormaliseModel(p[0] + "/" + p[1]); got != want {
				t.Errorf("NormaliseModel(%q) = %q, want %q", p[0]+"/"+p[1], got, want)
			}
		}
	}
}

// TestJSWhitespace compares jsstr.IsSpace with every code point JS's trim
// removes (node: the same set /\s/u matches).
func TestJSWhitespace(t *testing.T) {
	want := map[rune]bool{}
	for _, r := range []rune{0x9, 0xa, 0xb, 0xc, 0xd, 0x20, 0xa0, 0x1680,
		0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200a,
		0x2028, 0x2029, 0x202f, 0x205f, 0x3000, 0xfeff} {
		want[r] = true
	}
	for r := rune(0); r <= utf8.MaxRune; r++ {
		if jsstr.IsSpace(r) != want[r] {
			t.Errorf("jsstr.IsSpace(%U) = %v, want %v", r, !want[r], want[r])
		}
	}
	if got := jsTrim("\ufeff\u2028 local\r\n\u3000"); got != "local" {
		t.Errorf("jsTrim kept %q", got)
	}
	if got := jsTrim("\u0085local\u180e"); got != "\u0085local\u180e" {
		t.Errorf("jsTrim removed NEL or U+180E: %q", got)
	}
}

func TestJSSplitSpace(t *testing.T) {
	cases := map[string][]string{ // node
		"":         {""},
		"a":        {"a"},
		"1 2 ":     {"1", "2", ""},
		" 1 2":     {"", "1", "2"},
		"1 \t\n 2": {"1", "2"},
		" ":        {"", ""},
	}
	for in, want := range cases {
		got := jsSplitSpace(in)
		if strings.Join(got, "|") != strings.Join(want, "|") || len(got) != len(want) {
			t.Errorf("jsSplitSpace(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestDecodeUTF8(t *testing.T) {
	cases := []struct{ in, want string }{ // node Buffer.toString("utf8")
		{"a\xe2\x82Ab", "a\ufffdAb"},           // truncated sequence: one U+FFFD
		{"\xff\xfe", "\ufffd\ufffd"},           // two lone bytes: two
		{"\xef\xbb\xbfx", "\ufeffx"},           // BOM kept
		{"\xed\xa0\x80", "\ufffd\ufffd\ufffd"}, // surrogate: lead refuses A0
		{"\xe0\x80\x80", "\ufffd\ufffd\ufffd"}, // overlong
		{"\xf4\x90\x80\x80", "\ufffd\ufffd\ufffd\ufffd"},
		{"\xf0\x9f\x98", "\ufffd"},
		{"\xf0\x9f\x98\x80", "\U0001F600"},
		{"\xc3", "\ufffd"},
	}
	for _, c := range cases {
		if got := decodeUTF8([]byte(c.in)); got != c.want {
			t.Errorf("decodeUTF8(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
