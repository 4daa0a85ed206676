package transcript

import (
	"strings"
	"testing"
)

// A file whose only entry is a line pi's load throws on (a header, then
// null) has no reading: pi loads nothing, whatever the branch left after
// the scan drops the line, here none. 6226918's cases each kept entries
// around the dropped line, so a Final unknown only where the branch has
// entries (mutant T03: Unknown = b.Len > 0) passed them, and this file
// read as 0 tokens known where pi reports none.
func TestReadEndHasNoReadingWherePiThrowsOnTheOnlyEntry(t *testing.T) {
	const h3 = `{"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/w"}`
	end, err := ReadEnd(strings.NewReader(h3 + "\nnull\n"))
	if err != nil {
		t.Fatal(err)
	}
	if end.Known {
		t.Errorf("a reading of %d tokens, want none (pi loads nothing)", end.Tokens)
	}
	// The header alone is a reading of none in use: the line pi throws
	// on is what takes it away.
	if end, err := ReadEnd(strings.NewReader(h3 + "\n")); err != nil || !end.Known || end.Tokens != 0 {
		t.Errorf("the header alone: %+v, %v; want 0 tokens known", end, err)
	}
}
