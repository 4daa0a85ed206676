package main

import (
	"strings"
	"testing"
	"time"

	"sessdb/store"
)

// The stamp columns are as wide as dump's own widest mark, "(unreadable)",
// and no wider: a longer pi version or venue is cut to that width (the
// cut's "…" its last rune), so that the table keeps its room for NOTE;
// --wide and --json show it whole.
func TestDumpTableCutsALongStampToTheWidthOfItsMarks(t *testing.T) {
	pi, venue := "0.58.3-rc.1+build.7", "ci-runner-eu-west"
	var b strings.Builder
	err := dumpTable(&b, []store.KeyReport{{Name: strings.Repeat("a", 32), PiVersion: &pi, Venue: &venue}}, time.Now(), false, false)
	if err != nil {
		t.Fatal(err)
	}
	kept := len(unreadableCell) - 1 // the runes kept before "…"
	for _, stamp := range []string{pi, venue} {
		if cut := stamp[:kept] + "…"; !strings.Contains(b.String(), cut+"  ") {
			t.Errorf("%q: want it cut to %q (%d runes, as \"(unreadable)\")\n%s", stamp, cut, len(unreadableCell), b.String())
		}
	}
}
