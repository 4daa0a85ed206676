package main

import (
	"math"
	"math/big"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode"

	"golang.org/x/sys/unix"
)

// The fuzz targets of this file check the CLI's parsers of numbers, which
// read the operator's environment and the runner's flags, against
// reference implementations of the rules the docs give
// (docs/RELIABILITY.md §4, docs/cli.md), written apart from the code.

// jsSpace is JavaScript's white space for String.prototype.trim, as the
// standard defines it: WhiteSpace (TAB, VT, FF, ZWNBSP and every space
// separator, Unicode's Zs) and LineTerminator (LF, CR, LS, PS).
func jsSpace(r rune) bool {
	return unicode.Is(unicode.Zs, r) || strings.ContainsRune("\t\v\f\ufeff\n\r\u2028\u2029", r)
}

var canonicalWhole = regexp.MustCompile(`^(0|[1-9][0-9]*)$`)

// refWhole is the rule for a whole number: white space around it ignored,
// then the canonical decimal form (no sign, no leading zero, no point, no
// exponent), at most max. It says "range" or "form" for a refusal.
func refWhole(raw string, max uint64) (uint64, string) {
	s := strings.TrimFunc(raw, jsSpace)
	if !canonicalWhole.MatchString(s) {
		return 0, "form"
	}
	n, _ := new(big.Int).SetString(s, 10)
	if n.Cmp(new(big.Int).SetUint64(max)) > 0 {
		return 0, "range"
	}
	return n.Uint64(), ""
}

// kind is the refusal an error from the CLI's parsers says.
func kind(err error) string {
	switch {
	case err == nil:
		return ""
	case strings.Contains(err.Error(), "out of range"), strings.Contains(err.Error(), "want at most"),
		strings.Contains(err.Error(), "greater than 0"):
		return "range"
	}
	return "form"
}

// maxMessage bounds an error of a parser: the name, a value quoted at
// most briefMax bytes (each escaped at most as \U0010ffff) and the rule.
const maxMessage = 64 + 10*briefMax + 200

// maxNameMessage bounds an error that quotes a name (a path, an endpoint,
// a key prefix: quoteName), whole below PATH_MAX bytes, each byte escaped
// at most as \xNN, and cut as brief cuts it from PATH_MAX on.
const maxNameMessage = 64 + 4*unix.PathMax + 200

func FuzzWholeNumber(f *testing.F) {
	for _, s := range []string{"0", "14", " 14", "14\n", "\u00a014\u3000", "\ufeff7", "3.5", "1e3", "08", "+3", "-1", "abc", "3 4", "", " ",
		"18446744073709551615", "18446744073709551616", "9223372036854775807", "9223372036854775808", "0x10", "1_000", "١٢", "\u180e5", "\u200b5", "5\x85"} {
		f.Add(s, uint64(math.MaxInt64))
		f.Add(s, uint64(100))
	}
	f.Add("7", uint64(0))
	f.Add(strings.Repeat("9", 100000), uint64(math.MaxUint64))
	f.Fuzz(func(t *testing.T, raw string, max uint64) {
		want, wantKind := refWhole(raw, max)
		n, err := parseUint("PI_SESSIONS_TTL_DAYS", raw, max)
		if kind(err) != wantKind || n != want {
			t.Fatalf("parseUint(%q, max %d) = %d, %v; the rule says %d, %q", raw, max, n, err, want, wantKind)
		}
		if err != nil && (len(err.Error()) > maxMessage || !strings.HasPrefix(err.Error(), "PI_SESSIONS_TTL_DAYS: ")) {
			t.Fatalf("parseUint(%d bytes): the message does not name the variable in one short line: %d bytes", len(raw), len(err.Error()))
		}
	})
}

// FuzzParseReading checks the runner's overrides of a promotion's reading
// (--context-tokens, --context-window): each a whole number up to
// MaxInt64, the window above 0, "" for not given.
func FuzzParseReading(f *testing.F) {
	for _, s := range []string{"", "0", "61234", "200000", " 5 ", "-1", "1e5", "9223372036854775807", "9223372036854775808"} {
		f.Add(s, "200000")
		f.Add("61234", s)
	}
	f.Fuzz(func(t *testing.T, tokens, window string) {
		tp, w, err := parseReading(tokens, window)
		wantT, kt := refWhole(tokens, math.MaxInt64)
		wantW, kw := refWhole(window, math.MaxInt64)
		if kw == "" && wantW == 0 {
			kw = "range"
		}
		switch {
		case tokens != "" && kt != "":
			if err == nil || !strings.HasPrefix(err.Error(), "--context-tokens: ") {
				t.Fatalf("parseReading(%q, %q) = %v, want --context-tokens refused", tokens, window, err)
			}
		case window != "" && kw != "":
			if err == nil || !strings.HasPrefix(err.Error(), "--context-window: ") {
				t.Fatalf("parseReading(%q, %q) = %v, want --context-window refused", tokens, window, err)
			}
		case err != nil:
			t.Fatalf("parseReading(%q, %q): %v", tokens, window, err)
		case (tokens == "") != (tp == nil), tp != nil && *tp != int64(wantT):
			t.Fatalf("parseReading(%q, %q): tokens %v, want %d", tokens, window, tp, wantT)
		case window == "" && w != 0, window != "" && w != int64(wantW):
			t.Fatalf("parseReading(%q, %q): window %d, want %d", tokens, window, w, wantW)
		}
	})
}

// goUnits are the units of a Go duration, in nanoseconds.
var goUnits = map[string]int64{"ns": 1, "us": 1e3, "µs": 1e3, "μs": 1e3, "ms": 1e6, "s": 1e9, "m": 60e9, "h": 3600e9}

var durationPart = regexp.MustCompile(`^([0-9]+)(?:\.([0-9]+))?(ns|us|µs|μs|ms|s|m|h)`)

// refDuration is the rule for an etcd timeout or a grace period: a Go
// duration (components of digits, an optional fraction and a unit) with
// no sign and no space inside, white space around it (JavaScript's set,
// as around a whole number) trimmed, above 0 and at most max. It returns the exact
// value in nanoseconds, each component's fraction of a nanosecond dropped,
// and how many components have a fraction: Go computes a fraction in
// floating point, so each may come out a nanosecond above (Go reads
// "0.9999999999999999s" as 1s). ok is false for another form.
func refDuration(raw string) (exact *big.Int, fractions int64, ok bool) {
	raw = strings.TrimFunc(raw, jsSpace)
	if raw == "" {
		return nil, 0, false
	}
	exact = new(big.Int)
	for s := raw; s != ""; {
		m := durationPart.FindStringSubmatch(s)
		if m == nil {
			return nil, 0, false
		}
		s = s[len(m[0]):]
		if m[2] != "" {
			fractions++
		}
		v, _ := new(big.Rat).SetString(m[1] + "." + m[2] + "0")
		v.Mul(v, new(big.Rat).SetInt64(goUnits[m[3]]))
		exact.Add(exact, new(big.Int).Quo(v.Num(), v.Denom()))
	}
	return exact, fractions, true
}

func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"5s", "800ms", "1m30s", "10m", "10m1ns", "0s", "0", "5", "-5s", "+5s", " 5s", "5s ", "\t5s\n", "\u00a05s\ufeff", "5 s", " ", "1.5s", ".5s", "5.s", "1e3s",
		"5d", "5µs", "5μs", "5us", "9999999999999h", "2562047h47m16.854775807s", "0.0000000001ns", "1.9999999999ns", "", "s",
		"0.9999999999999999s", "9m59.9999999999999999s", "0.9999999999999999999ns"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		exact, fractions, form := refDuration(raw)
		for _, max := range []time.Duration{10 * time.Minute, math.MaxInt64} {
			d, err := parseDuration("PI_SESSIONS_ETCD_TIMEOUT", raw, 0, max)
			if err != nil && len(err.Error()) > maxMessage {
				t.Fatalf("parseDuration(%d bytes): a message of %d bytes", len(raw), len(err.Error()))
			}
			if !form {
				if kind(err) != "form" {
					t.Fatalf("parseDuration(%q) = %v, %v; the rule says not a duration", raw, d, err)
				}
				continue
			}
			// Within fractions ns of a bound, Go's rounding decides.
			lo := exact
			hi := new(big.Int).Add(exact, big.NewInt(fractions))
			inRange := lo.Sign() > 0 && hi.Cmp(big.NewInt(int64(max))) <= 0
			outOfRange := hi.Sign() <= 0 || lo.Cmp(big.NewInt(int64(max))) > 0
			switch {
			case kind(err) == "form":
				t.Fatalf("parseDuration(%q) = %v: the rule says a duration", raw, err)
			case err != nil && inRange:
				t.Fatalf("parseDuration(%q, max %v) = %v; the rule says %v ns", raw, max, err, exact)
			case err == nil && outOfRange:
				t.Fatalf("parseDuration(%q, max %v) = %v; the rule says %v ns, out of range", raw, max, d, exact)
			case err == nil && (d <= 0 || d > max || big.NewInt(int64(d)).Cmp(lo) < 0 || big.NewInt(int64(d)).Cmp(hi) > 0):
				t.Fatalf("parseDuration(%q, max %v) = %v; the rule says %v ns, up to %d more", raw, max, d, exact, fractions)
			}
		}
	})
}

var decimalForm = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?$`)

// FuzzParseDecimal checks engage's prices and ratios: digits with at most
// one point, no sign or exponent; the value is the nearest float64 to the
// decimal, at most maxPrice.
func FuzzParseDecimal(f *testing.F) {
	for _, s := range []string{"3", "0.30", "3.75", "1000000", "1000000.0000000001", "1000001", ".5", "5.", "+1", "-1", "1e3", " 3", "00.5", "", "."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := parseDecimal(s)
		if !decimalForm.MatchString(s) {
			if err == nil {
				t.Fatalf("parseDecimal(%q) = %v, not a decimal", s, v)
			}
			return
		}
		// The bound is on the value read, the nearest float64 (it keeps
		// the cost from overflowing): "1000000.00000000001" is 1e6.
		r, _ := new(big.Rat).SetString(s)
		want, _ := r.Float64()
		over := want > maxPrice
		switch {
		case over && err == nil:
			t.Fatalf("parseDecimal(%q) = %v, above %d", s, v, maxPrice)
		case !over && (err != nil || v != want):
			t.Fatalf("parseDecimal(%q) = %v, %v; want %v", s, v, err, want)
		}
	})
}

// FuzzParseEndpoints gives the endpoints variable a URL with credentials
// in it, the password any string (a ',', '@', '/', '%' or '#' in it, as a
// base64 or generated one may hold), anything after: the value is refused,
// and the message never carries a byte of the password's (marked) start,
// which would reach the job's log.
func FuzzParseEndpoints(f *testing.F) {
	for _, s := range [][2]string{{"pw", "127.0.0.1:2379"}, {"a,b", "h:1"}, {"a@b", "h:1"}, {"a/b%#", "h:1"}, {"a", "h:1,http://x@y:2"},
		{"", ""}, {"p", "h:1/"}, {"a:b", "[::1]:2379"}, {"x,https://u:", "h:1"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pass, rest string) {
		if strings.Contains(rest, "SECRET") {
			return // the marker must be the password's alone
		}
		raw := "http://user:SECRET" + pass + "@" + rest
		eps, err := parseEndpoints("PI_SESSIONS_ETCD_ENDPOINTS", raw)
		if err == nil {
			t.Fatalf("parseEndpoints(%q) = %q: credentials taken", raw, eps)
		}
		if strings.Contains(err.Error(), "SECRET") {
			t.Fatalf("parseEndpoints(%q): the message quotes the password: %v", raw, err)
		}
		if len(err.Error()) > maxNameMessage {
			t.Fatalf("parseEndpoints(%q): a %d-byte message: %.300q", raw, len(err.Error()), err)
		}
	})
}
