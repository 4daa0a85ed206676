package legacy

import (
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// whatwgDecode is the WHATWG Encoding Standard's UTF-8 decoder (§9.1.1),
// step by step as the standard writes it, with replacement on error: the
// reference for Node's Buffer.toString("utf8"), written apart from
// jsstr.DecodeStep's table.
func whatwgDecode(b []byte) string {
	var out strings.Builder
	cp, seen, needed := rune(0), 0, 0
	lower, upper := byte(0x80), byte(0xBF)
	for i := 0; i <= len(b); {
		if i == len(b) {
			if needed != 0 {
				out.WriteRune(utf8.RuneError)
			}
			break
		}
		c := b[i]
		if needed == 0 {
			switch {
			case c <= 0x7F:
				out.WriteByte(c)
			case c >= 0xC2 && c <= 0xDF:
				needed, cp = 1, rune(c&0x1F)
			case c >= 0xE0 && c <= 0xEF:
				if c == 0xE0 {
					lower = 0xA0
				}
				if c == 0xED {
					upper = 0x9F
				}
				needed, cp = 2, rune(c&0xF)
			case c >= 0xF0 && c <= 0xF4:
				if c == 0xF0 {
					lower = 0x90
				}
				if c == 0xF4 {
					upper = 0x8F
				}
				needed, cp = 3, rune(c&0x7)
			default:
				out.WriteRune(utf8.RuneError)
			}
			i++
			continue
		}
		if c < lower || c > upper {
			// Restore the state and prepend the byte to the stream: it is
			// read again as the start of the next character.
			cp, seen, needed, lower, upper = 0, 0, 0, 0x80, 0xBF
			out.WriteRune(utf8.RuneError)
			continue
		}
		lower, upper = 0x80, 0xBF
		cp = cp<<6 | rune(c&0x3F)
		seen++
		i++
		if seen == needed {
			out.WriteRune(cp)
			cp, seen, needed = 0, 0, 0
		}
	}
	return out.String()
}

// FuzzDecodeUTF8 checks the decoder of every sidecar's bytes (a venue, a
// pi version, a context line, written by whoever held the key dir)
// against the WHATWG decoder Node used: the same text, rune for rune,
// always valid UTF-8, and the bytes themselves when they are valid.
func FuzzDecodeUTF8(f *testing.F) {
	for _, s := range []string{"local", "0.54.2\n", "\ufeffci", "\xf0\x9f\x98", "\xe0\x80\x80", "\xed\xa0\x80x", "\xf4\x90\x80\x80",
		"\xc3", "a\xffb", "\xe2\x82\xac\xe2\x82", "\xf1\x80\x80\xc0"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got := decodeUTF8(b)
		if want := whatwgDecode(b); got != want {
			t.Fatalf("decodeUTF8(% x) = %+q; the WHATWG decoder gives %+q", b, got, want)
		}
		if !utf8.ValidString(got) || utf8.Valid(b) && got != string(b) {
			t.Fatalf("decodeUTF8(% x) = %+q", b, got)
		}
	})
}

// modelCharset is the legacy modelIdentity's pattern, as its docs give it.
var modelCharset = regexp.MustCompile(`^[a-z0-9][a-z0-9._:/-]{0,127}$`)

// FuzzNormaliseModel checks the model stamp's rule (--model, a context
// sidecar's third field, an assistant's provider and model in a
// transcript): an identity it gives matches the legacy charset, is the
// input lowercased as JavaScript lowercases it, and is its own identity;
// ModelIdentity of the two halves agrees with NormaliseModel of the
// joined string.
func FuzzNormaliseModel(f *testing.F) {
	for _, s := range []string{"anthropic/claude-sonnet-4-5", "OpenAI/GPT-4o", "\u212Aimi/k2", "a/b", "/b", "a/", "x", "İ/x", "a/b c", "-a/b", "a/" + strings.Repeat("b", 126)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id := NormaliseModel(s)
		if id == "" {
			return
		}
		if !modelCharset.MatchString(id) {
			t.Fatalf("NormaliseModel(%q) = %q, outside the charset", s, id)
		}
		// Only ASCII and the Kelvin sign can pass: each lowercases alone.
		if id != strings.ToLower(strings.ReplaceAll(s, "\u212A", "k")) {
			t.Fatalf("NormaliseModel(%q) = %q, not the input lowercased", s, id)
		}
		if again := NormaliseModel(id); again != id {
			t.Fatalf("NormaliseModel(%q) = %q, whose own identity is %q", s, id, again)
		}
		for i := 1; i < len(s)-1; i++ {
			if s[i] == '/' {
				if got := ModelIdentity(s[:i], s[i+1:]); got != id {
					t.Fatalf("ModelIdentity(%q, %q) = %q; NormaliseModel(%q) = %q", s[:i], s[i+1:], got, s, id)
				}
			}
		}
	})
}
