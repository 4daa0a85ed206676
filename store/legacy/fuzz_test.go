package legacy

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"sessdb/internal/jsstr"
)

func FuzzParseResumeChain(f *testing.F) {
	for _, s := range []string{
		"1", "3", " 3 ", "007", "0", "", "-4", "3.5", "abc", "+3", "1e3", "٣",
		"9007199254740992", "9007199254740993", "18446744073709552000",
		"100000000000000000000", "1000000000000000000000", "99999999999999999999",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n := ParseResumeChain(s)
		if n == 0 {
			return
		}
		// Only a canonical positive decimal, short enough for JS to print
		// without an exponent, can be a counter.
		if s[0] == '0' || len(s) > 21 || strings.TrimLeft(s, "0123456789") != "" {
			t.Fatalf("ParseResumeChain(%q) = %d; not a canonical decimal", s, n)
		}
		if n < math.MaxUint64 && strconv.FormatUint(n, 10) != s {
			t.Fatalf("ParseResumeChain(%q) = %d, which does not print back as the input", s, n)
		}
		if n == math.MaxUint64 && len(s) < 20 {
			t.Fatalf("ParseResumeChain(%q) saturated below 2^64", s)
		}
		// Anything JS accepts survives the writer's own format, and any
		// decoration of it is refused, as the legacy reader refused it.
		for _, bad := range []string{"0" + s, "+" + s, "-" + s, s + ".0", s + " ", " " + s, s + "x"} {
			if ParseResumeChain(bad) != 0 {
				t.Fatalf("ParseResumeChain(%q) accepted a decorated %q", bad, s)
			}
		}
	})
}

// FuzzSafeIntegersRoundTrip: every integer below 2^53 is a JS safe
// integer, so the writer's decimal reads back as itself.
func FuzzSafeIntegersRoundTrip(f *testing.F) {
	for _, n := range []uint64{1, 3, 9, 10, 99, 1 << 30, 1<<53 - 1, 123456789012345} {
		f.Add(n)
	}
	f.Fuzz(func(t *testing.T, n uint64) {
		n %= 1 << 53
		s := strconv.FormatUint(n, 10)
		if got := ParseResumeChain(s); got != n {
			t.Fatalf("ParseResumeChain(%q) = %d", s, got)
		}
		c, ok := ParseContext(s + " " + strconv.FormatUint(n+1, 10))
		if !ok || uint64(c.Tokens) != n || uint64(c.Window) != n+1 {
			t.Fatalf("ParseContext of %d %d = %+v, %v", n, n+1, c, ok)
		}
	})
}

func FuzzParseContext(f *testing.F) {
	for _, s := range []string{
		"12345 200000", "160000 200000 anthropic/claude-sonnet-4", "0 1", "1\t2", "1  2 m x",
		"1\u20282\u3000M/X", "", "5", "0 0", "-1 5", "1.5 2", "1 2x", "01 2", "1e3 2",
		" 1 2", "1 2 ", "100000000000000000000 200000000000000000000", "1\u00852",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, ok := ParseContext(s)
		if !ok {
			if c.Tokens != 0 || c.Window != 0 || c.Model != "" {
				t.Fatalf("ParseContext(%q) = %+v with no measurement", s, c)
			}
			return
		}
		if c.Tokens < 0 || c.Window <= 0 {
			t.Fatalf("ParseContext(%q) = %+v: tokens < 0 or window <= 0", s, c)
		}
		if strings.IndexFunc(c.Model, jsstr.IsSpace) >= 0 {
			t.Fatalf("ParseContext(%q): model %q holds whitespace", s, c.Model)
		}
		// Round trip through the legacy writer's format: the same reading.
		if c.Tokens < math.MaxInt64 && c.Window < math.MaxInt64 {
			out := strconv.FormatInt(c.Tokens, 10) + " " + strconv.FormatInt(c.Window, 10)
			if c.Model != "" {
				out += " " + c.Model
			}
			if c2, ok := ParseContext(out); !ok || c2 != c {
				t.Fatalf("ParseContext(%q) = %+v, but its rewrite %q reads %+v, %v", s, c, out, c2, ok)
			}
		}
		// A trailing field changes nothing (the legacy reader ignored it),
		// unless it would become the model of a two-field reading.
		if c.Model != "" && !strings.HasSuffix(s, " ") {
			if c2, ok := ParseContext(s + " extra"); !ok || c2 != c {
				t.Fatalf("ParseContext(%q + \" extra\") = %+v, %v; want %+v", s, c2, ok, c)
			}
		}
	})
}
