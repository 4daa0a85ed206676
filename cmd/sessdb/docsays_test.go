package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// docSays fails t unless docs/page holds says, white space runs taken as
// one space (the pages wrap their lines).
func docSays(t *testing.T, page, says string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", page))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(strings.Fields(string(b)), " "), says) {
		t.Errorf("docs/%s does not say %q", page, says)
	}
}
