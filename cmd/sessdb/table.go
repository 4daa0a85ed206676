package main

import (
	"io"
	"strings"
	"unicode"
)

// A column of a text table: its title, and the widest a cell may be
// before it is cut with "…" (0: never cut).
type column struct {
	title string
	max   int
}

// tableGap separates two columns.
const tableGap = "  "

// writeTable writes rows under the columns' titles, each column as wide as
// its widest cell, cells cut to the column's max. With limit > 0 the last
// column is cut so that no line is wider than limit (and, where even its
// title would not fit, the cuttable columns before it too): the table for
// people fits a terminal, and --wide or --json show everything. Cells must be
// printable already (printable): a width is a count of the columns a
// terminal gives them (cellWidth).
func writeTable(w io.Writer, cols []column, rows [][]string, limit int) error {
	cut := func(s string, max int) string {
		if max <= 0 || cellWidth(s) <= max {
			return s
		}
		// As much of s as fits in max-1 columns, then "…"; a wide rune
		// that would straddle the edge is left out whole.
		used := 0
		for i, r := range s {
			if used+runeWidth(r) > max-1 {
				return s[:i] + "…"
			}
			used += runeWidth(r)
		}
		return s
	}
	widths := make([]int, len(cols))
	all := append([][]string{titles(cols)}, rows...)
	for i := range all {
		for c := range cols {
			if m := cols[c].max; m > 0 && (c < len(cols)-1 || limit <= 0) {
				all[i][c] = cut(all[i][c], max(m, len(cols[c].title))) // a title is never cut
			}
			widths[c] = max(widths[c], cellWidth(all[i][c]))
		}
	}
	last := len(cols) - 1
	if limit > 0 {
		used := 0
		for c := 0; c < last; c++ {
			used += widths[c] + len(tableGap)
		}
		// The columns before the last, each at its max, may leave less
		// than the last one's title, which is never cut: the cells of
		// those that may be cut are cut further, right to left, never
		// below their title, until it fits.
		for c := last - 1; c >= 0 && used+cellWidth(cols[last].title) > limit; c-- {
			floor := cellWidth(cols[c].title)
			if cols[c].max <= 0 || widths[c] <= floor {
				continue
			}
			w := max(floor, widths[c]-(used+cellWidth(cols[last].title)-limit))
			for i := range all {
				all[i][c] = cut(all[i][c], w)
			}
			used -= widths[c] - w
			widths[c] = w
		}
		room := max(limit-used, cellWidth(cols[last].title))
		if cols[last].max > 0 {
			room = min(room, cols[last].max)
		}
		for i := range all {
			all[i][last] = cut(all[i][last], room)
		}
	}
	var b strings.Builder
	for _, row := range all {
		for c, cell := range row {
			b.WriteString(cell)
			if c < last {
				b.WriteString(strings.Repeat(" ", widths[c]-cellWidth(cell)) + tableGap)
			}
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func titles(cols []column) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = c.title
	}
	return out
}

// cellWidth is how many columns a terminal gives the printable cell s
// (runeWidth of each rune). A count of runes made a cell of CJK or
// fullwidth characters (a name under the root, a stamp) twice as wide as
// its column was taken to be: the columns after it no longer lined up,
// and its line passed the 160 columns the table promises.
func cellWidth(s string) int {
	n := 0
	for _, r := range s {
		n += runeWidth(r)
	}
	return n
}

// runeWidth is the columns a terminal gives r: none for a combining mark,
// which joins the rune before it; two for an East Asian wide or fullwidth
// rune (the blocks of Unicode's EastAsianWidth W and F, as wcwidth gives
// them); one for any other. Controls and format characters never reach a
// cell (printable escapes them).
func runeWidth(r rune) int {
	switch {
	case unicode.In(r, unicode.Mn, unicode.Me):
		return 0
	case r >= 0x1100 && r <= 0x115f, // Hangul Jamo initials
		r >= 0x2e80 && r <= 0x303e,   // CJK radicals to CJK symbols and punctuation
		r >= 0x3041 && r <= 0x33ff,   // kana to CJK compatibility
		r >= 0x3400 && r <= 0x4dbf,   // CJK extension A
		r >= 0x4e00 && r <= 0x9fff,   // CJK unified ideographs
		r >= 0xa000 && r <= 0xa4cf,   // Yi
		r >= 0xac00 && r <= 0xd7a3,   // Hangul syllables
		r >= 0xf900 && r <= 0xfaff,   // CJK compatibility ideographs
		r >= 0xfe30 && r <= 0xfe4f,   // CJK compatibility forms
		r >= 0xff00 && r <= 0xff60,   // fullwidth forms
		r >= 0xffe0 && r <= 0xffe6,   // fullwidth signs
		r >= 0x1f300 && r <= 0x1f64f, // pictographs and emoticons
		r >= 0x1f900 && r <= 0x1f9ff, // supplemental pictographs
		r >= 0x20000 && r <= 0x2fffd, // CJK extensions B and on
		r >= 0x30000 && r <= 0x3fffd:
		return 2
	}
	return 1
}
