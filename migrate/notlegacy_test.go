package migrate

import (
	"errors"
	"os"
	"strings"
	"testing"

	"sessdb/db"
)

// notLegacyErrorMax bounds an ErrNotLegacy error's length: the temp dir's
// path, the file's name, and at most 64 bytes of each value quoted (two
// of them where a value reads back as another), escaped.
const notLegacyErrorMax = 1024

// TestNotLegacyErrorsQuoteAValueInABoundedLength: a meta.db's stamp or
// model is the operator's or another host's to have written, of any
// length a bbolt value takes; ToLegacy's refusal names it, in at most 64
// bytes of it and its length, as the plan's oddities do, not whole.
func TestNotLegacyErrorsQuoteAValueInABoundedLength(t *testing.T) {
	dir, err := os.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	long := strings.Repeat("x", 100<<10)
	venue := " " + long
	for _, tc := range []struct {
		name string
		v    Values
	}{
		{"a pi version over the sidecar cap", Values{PiVersion: long}},
		{"a venue with white space around it", Values{PiVersion: "0.58.3", Venue: &venue}},
		{"a model that is no legacy model", Values{PiVersion: "0.58.3", Context: &db.Context{Tokens: 1, Window: 2, Model: " " + long}}},
	} {
		_, _, err := legacyFiles(dir, tc.v)
		if !errors.Is(err, ErrNotLegacy) {
			t.Fatalf("%s: legacyFiles = %v, want ErrNotLegacy", tc.name, err)
		}
		if n := len(err.Error()); n > notLegacyErrorMax {
			t.Errorf("%s: a value of %d bytes makes an error of %d bytes, want at most %d: %.200s…", tc.name, len(long)+1, n, notLegacyErrorMax, err)
		}
	}
}
