package main

import (
	"strings"
	"testing"

	"sessdb/gates"
)

// README's ladder table is gates.Ladder() printed: the same rows in the
// same order, each with its rung's reason, polarity and knob (the
// variable whose bound switches the rung on). An operator reads there
// which variable turns a rung on; a knob the code names otherwise (or
// not at all) would send them to the wrong one.
func TestREADMELadderIsTheGatesLadder(t *testing.T) {
	var rows [][]string
	for _, line := range strings.Split(docSection(t, "README.md", "Reasons"), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) != 7 {
			continue // not a row of the ladder's five columns
		}
		for i := range cells {
			cells[i] = strings.Trim(strings.TrimSpace(cells[i]), "`")
		}
		if cells[1] == "" || cells[1] == "#" || cells[1] == "ok" || strings.HasPrefix(cells[1], "-") {
			continue // a reason no rung names, the header, its rule
		}
		rows = append(rows, cells[1:6])
	}
	l := gates.Ladder()
	if len(rows) != len(l) {
		t.Fatalf("README's ladder has %d numbered rows, gates.Ladder() %d: %q", len(rows), len(l), rows)
	}
	for i, g := range l {
		want := []string{g.Number, string(g.Reason), g.Polarity.String(), g.Knob}
		got := []string{rows[i][0], rows[i][1], rows[i][3], rows[i][4]}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("README's ladder row %d: # reason polarity knob = %q; gates.Ladder() says %q", i, got, want)
		}
	}
}
