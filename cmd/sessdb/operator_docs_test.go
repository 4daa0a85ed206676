package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sessdb/gates"
)

// docs/json.md is where worker code looks up a field's values: every
// reason token a resolve or a promote can print (gates.Reasons, the
// closed vocabulary) is named there, not only in README's ladder.
func TestJSONDocNamesEveryReason(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "json.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range gates.Reasons() {
		if !strings.Contains(string(b), "`"+string(r)+"`") {
			t.Errorf("docs/json.md does not name the reason %s", r)
		}
	}
}
