package main

import (
	"io"
	"strings"
	"unicode/utf8"
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
// printable already (printable): a width is a count of runes.
func writeTable(w io.Writer, cols []column, rows [][]string, limit int) error {
	cut := func(s string, max int) string {
		if max <= 0 || utf8.RuneCountInString(s) <= max {
			return s
		}
		if max == 1 {
			return "…"
		}
		r := []rune(s)
		return string(r[:max-1]) + "…"
	}
	widths := make([]int, len(cols))
	all := append([][]string{titles(cols)}, rows...)
	for i := range all {
		for c := range cols {
			if m := cols[c].max; m > 0 && (c < len(cols)-1 || limit <= 0) {
				all[i][c] = cut(all[i][c], max(m, len(cols[c].title))) // a title is never cut
			}
			widths[c] = max(widths[c], utf8.RuneCountInString(all[i][c]))
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
		for c := last - 1; c >= 0 && used+utf8.RuneCountInString(cols[last].title) > limit; c-- {
			floor := utf8.RuneCountInString(cols[c].title)
			if cols[c].max <= 0 || widths[c] <= floor {
				continue
			}
			w := max(floor, widths[c]-(used+utf8.RuneCountInString(cols[last].title)-limit))
			for i := range all {
				all[i][c] = cut(all[i][c], w)
			}
			used -= widths[c] - w
			widths[c] = w
		}
		room := max(limit-used, utf8.RuneCountInString(cols[last].title))
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
				b.WriteString(strings.Repeat(" ", widths[c]-utf8.RuneCountInString(cell)) + tableGap)
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
