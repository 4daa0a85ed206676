package main

import (
	"io"
	"sort"
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
	// Line by line: the whole table in one string was as large again as
	// its rows (dump's of 100,000 keys is 12 MB).
	var b strings.Builder
	for _, row := range all {
		b.Reset()
		for c, cell := range row {
			b.WriteString(cell)
			if c < last {
				b.WriteString(strings.Repeat(" ", widths[c]-cellWidth(cell)) + tableGap)
			}
		}
		b.WriteByte('\n')
		if _, err := io.WriteString(w, b.String()); err != nil {
			return err
		}
	}
	return nil
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
// which joins the rune before it, nor for a Hangul medial vowel or final
// consonant jamo, which joins the initial before it into one syllable two
// columns wide (glibc's wcwidth gives them 0 too); two for an East Asian wide or fullwidth
// rune (wideRunes: Unicode's EastAsianWidth W and F, which take in the
// emoji a terminal draws wide, 🚀 ✅ ❌ ⭐ as much as 😀, and CJK); one for
// any other, East Asian ambiguous ones included, as a terminal outside a
// CJK locale gives them. Controls and format characters never reach a
// cell (printable escapes them). A narrow emoji followed by VS16 (❤️)
// counts one, as glibc's wcwidth has it; some terminals draw it two wide,
// and no rule of the rune alone can tell which a reader's does.
func runeWidth(r rune) int {
	if unicode.In(r, unicode.Mn, unicode.Me) || 0x1160 <= r && r <= 0x11ff || 0xd7b0 <= r && r <= 0xd7ff {
		return 0
	}
	i := sort.Search(len(wideRunes), func(i int) bool { return wideRunes[i][1] >= r })
	if i < len(wideRunes) && wideRunes[i][0] <= r {
		return 2
	}
	return 1
}

// wideRunes are the ranges of the runes of East Asian width W or F in
// Unicode's EastAsianWidth.txt (14.0), marks left out, in order: ranges
// apart by unassigned code points only are joined, and the blocks that
// Unicode gives W whole (CJK, planes 2 and 3, symbols and pictographs
// extended-A) are taken whole, for the runes later versions add there.
var wideRunes = [...][2]rune{
	{0x1100, 0x115f}, {0x231a, 0x231b}, {0x2329, 0x232a}, {0x23e9, 0x23ec},
	{0x23f0, 0x23f0}, {0x23f3, 0x23f3}, {0x25fd, 0x25fe}, {0x2614, 0x2615},
	{0x2648, 0x2653}, {0x267f, 0x267f}, {0x2693, 0x2693}, {0x26a1, 0x26a1},
	{0x26aa, 0x26ab}, {0x26bd, 0x26be}, {0x26c4, 0x26c5}, {0x26ce, 0x26ce},
	{0x26d4, 0x26d4}, {0x26ea, 0x26ea}, {0x26f2, 0x26f3}, {0x26f5, 0x26f5},
	{0x26fa, 0x26fa}, {0x26fd, 0x26fd}, {0x2705, 0x2705}, {0x270a, 0x270b},
	{0x2728, 0x2728}, {0x274c, 0x274c}, {0x274e, 0x274e}, {0x2753, 0x2755},
	{0x2757, 0x2757}, {0x2795, 0x2797}, {0x27b0, 0x27b0}, {0x27bf, 0x27bf},
	{0x2b1b, 0x2b1c}, {0x2b50, 0x2b50}, {0x2b55, 0x2b55}, {0x2e80, 0x3029},
	{0x302e, 0x303e}, {0x3041, 0x3096}, {0x309b, 0x3247}, {0x3250, 0x4dbf},
	{0x4e00, 0xa4c6}, {0xa960, 0xa97c}, {0xac00, 0xd7a3}, {0xf900, 0xfad9},
	{0xfe10, 0xfe19}, {0xfe30, 0xfe6b}, {0xff01, 0xff60}, {0xffe0, 0xffe6},
	{0x16fe0, 0x16fe3}, {0x16ff0, 0x1b2fb}, {0x1f004, 0x1f004}, {0x1f0cf, 0x1f0cf},
	{0x1f18e, 0x1f18e}, {0x1f191, 0x1f19a}, {0x1f200, 0x1f320}, {0x1f32d, 0x1f335},
	{0x1f337, 0x1f37c}, {0x1f37e, 0x1f393}, {0x1f3a0, 0x1f3ca}, {0x1f3cf, 0x1f3d3},
	{0x1f3e0, 0x1f3f0}, {0x1f3f4, 0x1f3f4}, {0x1f3f8, 0x1f43e}, {0x1f440, 0x1f440},
	{0x1f442, 0x1f4fc}, {0x1f4ff, 0x1f53d}, {0x1f54b, 0x1f54e}, {0x1f550, 0x1f567},
	{0x1f57a, 0x1f57a}, {0x1f595, 0x1f596}, {0x1f5a4, 0x1f5a4}, {0x1f5fb, 0x1f64f},
	{0x1f680, 0x1f6c5}, {0x1f6cc, 0x1f6cc}, {0x1f6d0, 0x1f6d2}, {0x1f6d5, 0x1f6df},
	{0x1f6eb, 0x1f6ec}, {0x1f6f4, 0x1f6fc}, {0x1f7e0, 0x1f7f0}, {0x1f90c, 0x1f93a},
	{0x1f93c, 0x1f945}, {0x1f947, 0x1f9ff}, {0x1fa70, 0x1faff},
	{0x20000, 0x2fffd}, {0x30000, 0x3fffd},
}
