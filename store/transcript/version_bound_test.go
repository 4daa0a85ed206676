package transcript

import (
	"strings"
	"testing"
)

// A header's version is read as pi reads it, a JavaScript number: the
// JSON text is rounded to the nearest float64 before anything compares
// it with the ±2^62 bound past which header_version is null (dump,
// inspect) and the format version pi reads is 3 (engage). So a text just
// inside the bound whose nearest float64 is 2^62 is outside it, as pi's
// number is: pi 0.58.3's SessionManager.open(f).getHeader().version >=
// 2**62 was true for each text below marked past, false for the others
// (pi-0.58.3, node 20). The largest float64 below 2^62 is 2^62-512.
func TestAHeaderVersionAtTheBoundIsPisNumber(t *testing.T) {
	for _, c := range []struct {
		text string
		past bool  // pi's number >= 2^62 (or <= -2^62)
		pi   int64 // pi's number where it is not past
	}{
		{"4611686018427387903", true, 0}, // 2^62-1: pi holds 2^62
		{"4611686018427387904", true, 0},
		{"4611686018427387648", true, 0}, // half way: rounds to even, 2^62
		{"4611686018427387647", false, 4611686018427387392},
		{"4611686018427387392", false, 4611686018427387392},
		{"4611686018427388416", true, 0},
		{"-4611686018427387903", true, 0},
		{"-4611686018427387647", false, -4611686018427387392},
	} {
		line := `{"type":"session","version":` + c.text + `,"id":"a","timestamp":"2026-01-01T00:00:00Z","cwd":"/"}`
		h, err := ReadHeader(strings.NewReader(line + "\n"))
		if err != nil {
			t.Fatalf("%s: %v", c.text, err)
		}
		wantHeader := c.pi // header_version: null (0) past the bound
		if h.Version != wantHeader {
			t.Errorf("version %s: header version %d, want %d (pi's number past 2^62: %v)", c.text, h.Version, wantHeader, c.past)
		}
		sc := NewScanner(strings.NewReader(line + "\n"))
		for sc.Next() {
		}
		if err := sc.Err(); err != nil {
			t.Fatalf("%s: scan: %v", c.text, err)
		}
		// pi loads a version >= 3 as is and migrates one below 2 from v1.
		want := int64(3)
		switch {
		case c.pi < 0 || c.past && c.text[0] == '-':
			want = 1
		case !c.past:
			want = c.pi
		}
		if sc.Version() != want {
			t.Errorf("version %s: scanned as format %d, want %d", c.text, sc.Version(), want)
		}
	}
}
