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
	p := Locate(sub)
	if p == "" {
		tb.Skipf("shared test data ../shared/testdata/%s is absent (it sits beside the repository, not in it)", sub)
	}
	return p
}

// Locate returns ../shared/testdata/<sub> beside the module root, or ""
// when it is absent, for callers that decide without a test at hand.
func Locate(sub string) string {
	root := ModuleRoot()
	if root == "" {
		return ""
	}
	p := filepath.Join(root, "..", "shared", "testdata", sub)
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

// ModuleRoot is the nearest directory at or above the working directory
// that holds go.mod, or "".
func ModuleRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}
