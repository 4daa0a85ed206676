package main

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// helpProseWidth is the widest line a help text's prose may have: its
// paragraphs are wrapped by hand, and its flags by writeFlags, for an
// 80-column terminal, where a line that runs past it wraps mid-word.
const helpProseWidth = 80

// TestHelpProseFitsEightyColumns holds every command's help, from its
// paragraphs through its flags, and its exit statuses after the example,
// to the width they were wrapped for. A line of one word (a JSON object's
// field list) cannot be cut. The usage line, the one-line summary (the
// command list's row) and the example's shell lines are left as they
// are: a shell line cut in two would not run as shown.
func TestHelpProseFitsEightyColumns(t *testing.T) {
	for _, c := range commands {
		lines := strings.Split(c.helpText(), "\n")
		if len(lines) < 3 || !strings.HasPrefix(lines[0], "usage: ") || lines[2] != c.short {
			t.Fatalf("sessdb help %s: not usage, blank, summary: %q", c.name, lines[:min(3, len(lines))])
		}
		checked, example, exits := 0, false, 0
		for i, line := range lines[3:] {
			switch {
			case line == "example:":
				example = true
			case line == "exit status:":
				example = false
				exits++
			}
			if example {
				continue
			}
			checked++
			if n := utf8.RuneCountInString(line); n > helpProseWidth && strings.Contains(line, " ") {
				t.Errorf("sessdb help %s: line %d is %d columns, over %d: %q", c.name, i+4, n, helpProseWidth, line)
			}
		}
		if checked == 0 || checked == len(lines)-3 || exits != 1 {
			t.Errorf("sessdb help %s: %d of %d lines checked, %d exit status sections: no text, no example after it, or no exit status after that", c.name, checked, len(lines), exits)
		}
	}
}
