package transcript

import (
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// FuzzDecodeJS checks the decoder of a transcript's JSON strings (ids,
// parentIds, roles, model names: the container's) on the contents of any
// JSON string literal. jsText is text: valid UTF-8, and exactly what
// encoding/json decodes wherever the bytes are UTF-8 (a lone surrogate
// escape U+FFFD in both). jsString differs from it only where pi's string
// holds a lone surrogate, which it keeps as that code unit's three WTF-8
// bytes, where jsText has U+FFFD.
func FuzzDecodeJS(f *testing.F) {
	for _, s := range []string{`abc`, `a\"b\\c\/d\b\f\n\r\t`, `\u00e9\u20ac`, `\ud83d\ude00`, `\ud83d`, `\ude00x`, `\ud83d\u0041`,
		`\ud83d\ud83d\ude00`, "caf\xc3\xa9", "a\xffb", "\xf0\x9f\x98", `\u0000`, `\uDBFF\uDFFF`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		lit := append(append([]byte{'"'}, raw...), '"')
		var want string
		if !json.Valid(lit) || json.Unmarshal(lit, &want) != nil {
			return // not the contents of one JSON string: the scanner never passes it
		}
		text, str := jsText(raw), jsString(raw)
		if !utf8.ValidString(text) {
			t.Fatalf("jsText(%q) = %+q: not UTF-8", raw, text)
		}
		if utf8.Valid(raw) && text != want {
			t.Fatalf("jsText(%q) = %+q; encoding/json decodes %+q", raw, text, want)
		}
		// jsString with each WTF-8 surrogate (ED A0-BF xx) made U+FFFD.
		var b []byte
		for i := 0; i < len(str); {
			if str[i] == 0xED && i+2 < len(str) && str[i+1] >= 0xA0 && str[i+1] <= 0xBF {
				b = utf8.AppendRune(b, utf8.RuneError)
				i += 3
				continue
			}
			b = append(b, str[i])
			i++
		}
		if string(b) != text {
			t.Fatalf("jsString(%q) = %+q, jsText %+q: they differ beyond lone surrogates", raw, str, text)
		}
	})
}
