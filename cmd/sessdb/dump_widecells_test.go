package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
)

// A terminal gives a CJK or fullwidth character two columns. dump's table
// counted runes: a name under the root or a stamp written in them was cut
// to as many runes as its column has columns, twice as wide as the
// column, so the columns after it no longer lined up and its line passed
// the 160 columns dump's help promises.
func TestDumpTableCountsWideCharactersAsTwoColumns(t *testing.T) {
	atSampleTime(t)
	root := copySample(t)
	const legacyKey = "efc1ddda39889994198ccddd21905257"
	if err := os.WriteFile(filepath.Join(root, legacyKey, "pi-version"), []byte(strings.Repeat("版本", 20)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, legacyKey, "venue"), []byte(strings.Repeat("ｌｏｃａｌ", 4)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, strings.Repeat("名前", 20)), 0o700); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, "dump", root)
	if code != exitOK {
		t.Fatalf("dump: exit %d, stderr %q", code, errs)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	chain := columnOf(lines[0], "CHAIN")
	if chain < 0 {
		t.Fatalf("no CHAIN title in %q", lines[0])
	}
	for _, l := range lines {
		cols := terminalColumns(l)
		if len(cols) > dumpWidth {
			t.Errorf("a line of %d columns, past %d: %q", len(cols), dumpWidth, l)
		}
		if len(cols) <= chain || cols[chain] == ' ' || cols[chain-1] != ' ' || cols[chain-2] != ' ' {
			t.Errorf("CHAIN's cell does not begin at column %d, under its title: %q", chain, l)
		}
	}
}

// A terminal gives the emoji of East Asian width W two columns too, those
// of the symbol blocks (✅ ❌ ⭐ ⚡ in U+2xxx) and of transport and map
// symbols (🚀 🛑) as much as the emoticons: runeWidth counted only the
// emoticon and pictograph blocks, so a stamp or a name with ✅ or 🚀 in it
// misaligned the table as a CJK one did.
func TestDumpTableCountsWideEmojiAsTwoColumns(t *testing.T) {
	atSampleTime(t)
	root := copySample(t)
	const legacyKey = "efc1ddda39889994198ccddd21905257"
	if err := os.WriteFile(filepath.Join(root, legacyKey, "venue"), []byte(strings.Repeat("✅🚀", 8)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, strings.Repeat("❌⭐⚡🛑", 10)), 0o700); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, "dump", root)
	if code != exitOK {
		t.Fatalf("dump: exit %d, stderr %q", code, errs)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	chain := columnOf(lines[0], "CHAIN")
	if chain < 0 {
		t.Fatalf("no CHAIN title in %q", lines[0])
	}
	for _, l := range lines {
		cols := terminalColumns(l)
		if len(cols) > dumpWidth {
			t.Errorf("a line of %d columns, past %d: %q", len(cols), dumpWidth, l)
		}
		if len(cols) <= chain || cols[chain] == ' ' || cols[chain-1] != ' ' || cols[chain-2] != ' ' {
			t.Errorf("CHAIN's cell does not begin at column %d, under its title: %q", chain, l)
		}
	}
}

// terminalColumns is line as a terminal lays it out, one rune a column: a
// CJK or fullwidth rune, or one of the wide emoji the tests use, takes
// two, the second marked 0.
func terminalColumns(line string) []rune {
	var cols []rune
	for _, r := range line {
		cols = append(cols, r)
		if unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul) || r >= 0xff01 && r <= 0xff60 || strings.ContainsRune("✅🚀❌⭐⚡🛑", r) {
			cols = append(cols, 0)
		}
	}
	return cols
}

// columnOf is the column the title begins at in the header line, or -1.
func columnOf(header, title string) int {
	i := strings.Index(header, title)
	if i < 0 {
		return -1
	}
	return len(terminalColumns(header[:i]))
}
