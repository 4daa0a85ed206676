package transcript

import (
	"bytes"
	"encoding/json"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// stringifyOracle is JSON.stringify(JSON.parse(b)).length worked out
// another way: encoding/json decodes the value (a repeated key keeps its
// last value, as in JSON.parse), and the length is summed over what it
// decoded. It cannot answer for text that is not UTF-8 or has an escaped
// surrogate, which encoding/json turns into U+FFFD where JavaScript keeps
// the code units.
func stringifyOracle(b []byte) (int64, bool) {
	if !utf8.Valid(b) || surrogateEscape.Match(b) {
		return 0, false
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return 0, false
	}
	return oracleUnits(v), true
}

var surrogateEscape = regexp.MustCompile(`\\u[dD][89a-fA-F]`)

func oracleUnits(v any) int64 {
	switch v := v.(type) {
	case nil:
		return 4
	case bool:
		if v {
			return 4
		}
		return 5
	case string:
		n := int64(2)
		for _, r := range v {
			switch {
			case strings.ContainsRune("\"\\\b\f\n\r\t", r):
				n += 2
			case r < 0x20:
				n += 6
			case r > 0xFFFF:
				n += 2
			default:
				n++
			}
		}
		return n
	case json.Number:
		f, _ := strconv.ParseFloat(string(v), 64)
		return int64(len(jsNumberString(f)))
	case []any:
		n := int64(2 + max(len(v)-1, 0))
		for _, e := range v {
			n += oracleUnits(e)
		}
		return n
	case map[string]any:
		n := int64(2 + max(len(v)-1, 0))
		for k, e := range v {
			n += oracleUnits(k) + 1 + oracleUnits(e)
		}
		return n
	}
	panic("unexpected value")
}

// jsNumberString is Number::toString as JSON.stringify writes it: "null"
// for an infinity, decimal notation from 1e-6 up to below 1e21, exponent
// notation ("1e-7", "1.5e+300") outside.
func jsNumberString(f float64) string {
	switch a := math.Abs(f); {
	case math.IsInf(f, 0):
		return "null"
	case f == 0:
		return "0"
	case a >= 1e-6 && a < 1e21:
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	s := strconv.FormatFloat(f, 'e', -1, 64) // an exponent of at least two digits
	mant, exp, _ := strings.Cut(s, "e")
	return mant + "e" + exp[:1] + strings.TrimLeft(exp[1:], "0")
}

// What pi's estimateTokens counts for a tool call: name.length +
// JSON.stringify(arguments).length on the value JSON.parse read. Each
// count below was checked against JavaScript.
func TestStringifyUnits(t *testing.T) {
	for _, c := range []struct {
		in   string
		want string // what JSON.stringify writes
	}{
		{`{"command" : "ls -la", "n": [1, 2]}`, `{"command":"ls -la","n":[1,2]}`},
		{`{"q":"\u00e9"}`, `{"q":"é"}`},
		{`{"p":"\/a\/b"}`, `{"p":"/a/b"}`},
		{`{"q":"<a&b>` + "\u2028" + `"}`, `{"q":"<a&b>` + "\u2028" + `"}`},
		{`{"s":"\u007f\u0080\ud83d\ude00"}`, `{"s":"` + "\u007f\u0080\U0001F600" + `"}`},
		{`"\u0001\u001f\b\u000c\n\r\t\"\\\u005c\u0022"`, `"\u0001\u001f\b\f\n\r\t\"\\\\\""`},
		{`"\ud800x\udc00\ud83d"`, `"\ud800x\udc00\ud83d"`},
		// A high surrogate whose next escape is no low one stays alone;
		// U+E000, just past the surrogates, is a character; a low half is
		// no high one; the last low half pairs (mutation sweep: the low
		// half's range made an `||`, its upper bound moved to 0xE000 or
		// the pair's to 0xDFFE, the high halves' to 0xDC00: each counted
		// otherwise; no case held them).
		{`"\ud800\u0041"`, `"\ud800A"`},
		{`"\ue000\udfff"`, `"` + "\ue000" + `\udfff"`},
		{`"\udc00\udc00"`, `"\udc00\udc00"`},         // two low halves: no pair
		{`"\ud800\udfff"`, `"` + "\U000103FF" + `"`}, // the last low half pairs
		{`"\udbff\udfff"`, `"` + "\U0010FFFF" + `"`}, // and the last high half
		{`"\ud800\udc00"`, `"` + "\U00010000" + `"`}, // the first low half pairs (mutation sweep: its bound moved to 0xDC01)
		{`"` + "\xff\xe2\x82" + `"`, `"` + "\ufffd\ufffd" + `"`},
		{`{"n":1.000000,"m":2.50000,"z":-0,"q":0.100000}`, `{"n":1,"m":2.5,"z":0,"q":0.1}`},
		{`[1E+2,1e-10,1.5E300,1e21,1e20,0.000001,1e-7,-5e-324,1e400,-1e400,123456789012345680000]`,
			`[100,1e-10,1.5e+300,1e+21,100000000000000000000,0.000001,1e-7,-5e-324,null,null,123456789012345680000]`},
		{`{"k":"aaaaaaaaaaaaaaaaaaaaaaa","k":"b"}`, `{"k":"b"}`},
		{`{"a":1,"b":{"a":[],"a":{}},"a":"xyz"}`, `{"a":"xyz","b":{"a":{}}}`},
		{`{"\u0061":1,"a":22}`, `{"a":22}`},
		{`null`, `null`},
		{`"just a string \u00e9"`, `"just a string é"`},
		{`[true,false,null,{},[]]`, `[true,false,null,{},[]]`},
	} {
		want := int64(len(utf16Encode(c.want)))
		if got := stringifyUnits([]byte(c.in)); got != want {
			t.Errorf("%s: %d, want %d (%s)", c.in, got, want, c.want)
		}
		if o, ok := stringifyOracle([]byte(c.in)); ok && o != want {
			t.Errorf("%s: the oracle says %d, want %d", c.in, o, want)
		}
	}
	// Many members, so the repeated ones are found by the map.
	var b strings.Builder
	b.WriteString("{")
	for i := range 100 {
		b.WriteString(`"k` + strconv.Itoa(i%40) + `":` + strconv.Itoa(i) + ",")
	}
	b.WriteString(`"last":0}`)
	want, _ := stringifyOracle([]byte(b.String()))
	if got := stringifyUnits([]byte(b.String())); got != want {
		t.Errorf("100 members, 40 keys: %d, want %d", got, want)
	}
}

// utf16Encode gives the UTF-16 code units of s, keeping the lone
// surrogates the escapes in the table above stand for.
func utf16Encode(s string) []uint16 {
	var out []uint16
	for i := 0; i < len(s); {
		if strings.HasPrefix(s[i:], `\u`) && i+6 <= len(s) {
			if v, err := strconv.ParseUint(s[i+2:i+6], 16, 16); err == nil && v >= 0xD800 && v <= 0xDFFF {
				out = append(out, 6, 6, 6, 6, 6, 6) // written escaped: six characters
				i += 6
				continue
			}
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r > 0xFFFF {
			out = append(out, 0, 0)
		} else {
			out = append(out, 0)
		}
		i += size
	}
	return out
}

// stringifyUnits returns JSON.stringify(JSON.parse(raw)).length for a JSON
// text valid accepted: what pi's estimateTokens counts for a tool call's
// arguments. It measures without building the value. JSON.stringify writes
// no whitespace; writes a string with only `"`, `\`, the control characters
// and lone surrogates escaped (so "\u00e9" and "\/" as written count one
// unit each, and U+2028 or "<" stay one); writes a number in its shortest
// form (1.0 is "1", 1E+2 is "100", -0 is "0", a number too large for a
// float64 is "null"); and writes a repeated key once, at its first place,
// with its last value, as JSON.parse kept it. Key order does not change the
// length.
func stringifyUnits(raw []byte) int64 {
	var s stringifier
	return s.units(raw)
}
