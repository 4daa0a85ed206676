// Package sharedtest locates the project's shared test data: pi's
// fixtures and two real transcripts, which sit beside the repository in
// ../shared/testdata and are never copied into it.
package sharedtest

import (
	"os"
	"path/filepath"
	"testing"
)

// Dir returns ../shared/testdata/<sub> beside the module root, or skips
// the test with a message saying why, when that folder is absent.
func Dir(tb testing.TB, sub string) string {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			tb.Skip("no go.mod above the package directory; cannot locate ../shared/testdata")
		}
		dir = parent
	}
	p := filepath.Join(dir, "..", "shared", "testdata", sub)
	if _, err := os.Stat(p); err != nil {
		tb.Skipf("shared test data %s is absent (it sits beside the repository, not in it): %v", p, err)
	}
	return p
}
