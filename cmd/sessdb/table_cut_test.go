package main

import (
	"strings"
	"testing"
)

// writeTable with a limit cuts the last column to fit; where the columns
// before it leave less than the last one's title, it cuts those that may
// be cut (max > 0), right to left, each no more than needed and never
// below its title, and never one that may not (max 0). Every line then
// fits the limit exactly, but where the titles alone do not.
func TestWriteTableCutsTheColumnsBeforeTheLastRightToLeft(t *testing.T) {
	note := column{"NOTE", 0}
	for _, c := range []struct {
		name  string
		cols  []column
		row   []string
		limit int
		want  []string
	}{
		{"the column before the last cut", []column{{"A", 0}, {"BB", 10}, {"C", 10}, note},
			[]string{"aaaaaaaa", "bbbbbbbbbb", "cccccccccc", "note text here"}, 30,
			[]string{"A         BB          C   NOTE", "aaaaaaaa  bbbbbbbbbb  c…  not…"}},
		{"to its title, then the one before it", []column{{"A", 0}, {"BB", 10}, {"C", 10}, note},
			[]string{"aaaaaaaa", "bbbbbbbbbb", "cccccccccc", "note text here"}, 24,
			[]string{"A         BB     C  NOTE", "aaaaaaaa  bbbb…  …  not…"}},
		{"never below a title, though the line is then wider", []column{{"A", 0}, {"BB", 10}, {"C", 10}, note},
			[]string{"aaaaaaaa", "bbbbbbbbbb", "cccccccccc", "note text here"}, 20,
			[]string{"A         BB  C  NOTE", "aaaaaaaa  b…  …  not…"}},
		{"past one that may not be cut, to the first", []column{{"X", 10}, {"Y", 0}, note},
			[]string{"xxxxxxxxxx", "yyyy", "note text here"}, 16,
			[]string{"X     Y     NOTE", "xxx…  yyyy  not…"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b strings.Builder
			if err := writeTable(&b, c.cols, [][]string{c.row}, c.limit); err != nil {
				t.Fatal(err)
			}
			if got := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n"); strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("limit %d:\n%s\nwant:\n%s", c.limit, strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
		})
	}
}
