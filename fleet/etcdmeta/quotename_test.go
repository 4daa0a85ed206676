package etcdmeta

import (
	"strconv"
	"strings"
	"testing"
)

// A history name that is no slot's is quoted whole up to 64 bytes, and
// past that as its first 64 bytes at most, cut where a rune starts, with
// its length: the error stays short and readable (no rune torn into
// escapes) however long a name another binary wrote.
func TestQuoteNameIsWholeUpTo64BytesAndCutAtARuneBeyond(t *testing.T) {
	exact := strings.Repeat("x", 64)
	if got, want := quoteName(exact), strconv.Quote(exact); got != want {
		t.Errorf("quoteName of 64 bytes = %s, want it whole, %s", got, want)
	}
	long := strings.Repeat("x", 63) + "é" + strings.Repeat("y", 100) // é's second byte is the 65th
	if got, want := quoteName(long), strconv.Quote(strings.Repeat("x", 63))+"…(165 bytes)"; got != want {
		t.Errorf("quoteName of a long name = %s, want %s", got, want)
	}
}
