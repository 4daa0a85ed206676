package main

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// 'sessdb help', the list an operator reads first, fits an 80-column
// terminal: a one-liner wider than that broke at the terminal's edge
// into column 0, under the command names (stats' line was 143 columns).
func TestCommandListFits80Columns(t *testing.T) {
	code, out, errs := runCLI(t, "help")
	if code != exitOK {
		t.Fatalf("help: exit %d, %s", code, errs)
	}
	for _, line := range strings.Split(out, "\n") {
		if n := utf8.RuneCountInString(line); n > 80 {
			t.Errorf("%d columns: %s", n, line)
		}
	}
	for _, c := range commands {
		if !strings.Contains(strings.Join(strings.Fields(out), " "), c.name+" "+c.short) {
			t.Errorf("the list lacks %s's one-liner, whole: %q", c.name, c.short)
		}
	}
}
