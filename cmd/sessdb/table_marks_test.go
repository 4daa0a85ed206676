package main

import (
	"strings"
	"testing"
	"unicode"
)

// A combining mark takes no column of its own: a cell that holds some
// (café written with U+0301) is as wide as its letters, and the column
// after it lines up under its title.
func TestATableGivesACombiningMarkNoColumn(t *testing.T) {
	var out strings.Builder
	cols := []column{{"NAME", 0}, {"N", 0}}
	rows := [][]string{{"cafe\u0301s", "1"}, {"abcde", "2"}, {"x", "3"}}
	if err := writeTable(&out, cols, rows, 0); err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		col := 0
		for _, r := range l[:strings.LastIndex(l, "  ")+2] {
			if !unicode.Is(unicode.Mn, r) {
				col++
			}
		}
		if col != len("abcde")+len(tableGap) {
			t.Errorf("line %q: its last column begins at column %d, want %d", l, col, len("abcde")+len(tableGap))
		}
	}
}

// runeWidth gives two columns at both ends of the East Asian wide and
// fullwidth blocks it names (Unicode's EastAsianWidth W or F there), and
// one just past them (N, Na or H), but for the Hangul medial and final
// jamo after the initials and the syllables, which join the syllable
// before them and take none (as glibc's wcwidth gives them).
func TestRuneWidthAtTheEndsOfTheWideBlocks(t *testing.T) {
	for r, want := range map[rune]int{
		0x1100: 2, 0x115f: 2, 0x1160: 0, 0x11ff: 0, 0x1200: 1, // Hangul Jamo initials, then medials and finals
		0x3000: 2, 0x303e: 2, 0x303f: 1, // ideographic space to CJK symbols
		0x4e00: 2, 0x9fff: 2, // CJK unified ideographs
		0xac00: 2, 0xd7a3: 2, 0xd7b0: 0, 0xd7ff: 0, // Hangul syllables, then Jamo Extended-B
		0xd7a4: 1, 0xf900: 2,
		0xff01: 2, 0xff60: 2, 0xff61: 1, // fullwidth forms, then halfwidth
		0x1f300: 2, 0x1f64f: 2, 0x1f650: 1, // pictographs and emoticons
		'a': 1, 'é': 1,
	} {
		if got := runeWidth(r); got != want {
			t.Errorf("runeWidth(%U %c) = %d, want %d", r, r, got, want)
		}
	}
}

// A Hangul syllable written as its jamo (U+1112 U+1161 U+11AB, 한 as a
// terminal draws it) is two columns, as the precomposed one is: the
// medial and final jamo join the initial. Counted one each, the cell was
// taken two columns wider than it is, and the column after it did not
// line up.
func TestATableGivesConjoiningJamoTheSyllablesWidth(t *testing.T) {
	var out strings.Builder
	cols := []column{{"NAME", 0}, {"N", 0}}
	rows := [][]string{{"\u1112\u1161\u11abx", "1"}, {"\ud55cx", "2"}, {"abc", "3"}}
	if err := writeTable(&out, cols, rows, 0); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	want := []string{"NAME" + tableGap + "N", "\u1112\u1161\u11abx " + tableGap + "1", "\ud55cx " + tableGap + "2", "abc " + tableGap + "3"}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("table:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}
