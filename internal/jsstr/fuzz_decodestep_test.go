package jsstr

import (
	"testing"
	"unicode/utf8"
)

// properPrefixes holds every proper prefix of the UTF-8 encoding of every
// Unicode scalar value (surrogates excluded): the byte strings that can
// still become a well-formed character. Built from utf8.EncodeRune, apart
// from DecodeStep's table of lead bytes and bounds.
var properPrefixes = func() map[string]bool {
	m := make(map[string]bool)
	var buf [utf8.UTFMax]byte
	for r := rune(0); r <= utf8.MaxRune; r++ {
		if r >= 0xD800 && r <= 0xDFFF {
			continue
		}
		n := utf8.EncodeRune(buf[:], r)
		for k := 1; k < n; k++ {
			m[string(buf[:k])] = true
		}
	}
	return m
}()

// FuzzDecodeStep checks DecodeStep against the Unicode definition the
// WHATWG decoder follows (Unicode 3.9, "U+FFFD substitution of maximal
// subparts"), on any bytes a sidecar or a transcript can hold. A
// well-formed character is consumed whole and reported ok; otherwise
// exactly the maximal subpart is consumed: the longest prefix that could
// still begin a well-formed character, or the one byte that cannot, and
// never the byte that broke it.
func FuzzDecodeStep(f *testing.F) {
	for _, s := range []string{"a", "é", "€", "😀", "\xc0\x80", "\xe0\x80\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80",
		"\xf0\x9f\x98", "\xf0\x9f", "\xf0", "\xe2\x82", "\xff", "\x80", "\xc2", "\xf5\x80\x80\x80", "\xe1\x80a"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 {
			return // DecodeStep's contract: len(b) > 0
		}
		checkDecodeStep(t, b)
	})
}

// TestDecodeStepAtEveryBoundary checks FuzzDecodeStep's property on every
// byte string of one and two bytes, and on every lead byte followed by
// the bytes at each edge of a continuation range (0x7F, 0x80, 0x8F, 0x90,
// 0x9F, 0xA0, 0xBF, 0xC0): the seeds alone left most lead bytes and
// bounds unchecked.
func TestDecodeStepAtEveryBoundary(t *testing.T) {
	edges := []byte{0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0}
	for c := 0; c < 256; c++ {
		checkDecodeStep(t, []byte{byte(c)})
		for d := 0; d < 256; d++ {
			checkDecodeStep(t, []byte{byte(c), byte(d)})
		}
		for _, d := range edges {
			for _, e := range edges {
				checkDecodeStep(t, []byte{byte(c), d, e})
				for _, g := range edges {
					checkDecodeStep(t, []byte{byte(c), d, e, g})
				}
			}
		}
	}
}

// checkDecodeStep is FuzzDecodeStep's property for b (len(b) > 0).
func checkDecodeStep(t *testing.T, b []byte) {
	t.Helper()
	size, ok := DecodeStep(b)
	if size < 1 || size > len(b) || size > utf8.UTFMax {
		t.Fatalf("DecodeStep(% x) = %d: outside 1..%d", b, size, min(len(b), utf8.UTFMax))
	}
	if again, ok2 := DecodeStep(b); again != size || ok2 != ok {
		t.Fatalf("DecodeStep(% x) = %d %v, then %d %v", b, size, ok, again, ok2)
	}
	r, n := utf8.DecodeRune(b)
	wellFormed := r != utf8.RuneError || n > 1 // U+FFFD itself is well formed
	if ok != wellFormed || ok && size != n {
		t.Fatalf("DecodeStep(% x) = %d %v; the character at its start is %q of %d bytes", b, size, ok, r, n)
	}
	if ok {
		return
	}
	// The maximal subpart: a proper prefix of some character (or one
	// byte, when none begins there), which the next byte does not
	// extend.
	if size > 1 && !properPrefixes[string(b[:size])] {
		t.Fatalf("DecodeStep(% x) consumed % x, which begins no character", b, b[:size])
	}
	if size < len(b) && properPrefixes[string(b[:size+1])] {
		t.Fatalf("DecodeStep(% x) stopped at %d, but % x can still begin a character", b, size, b[:size+1])
	}
}
