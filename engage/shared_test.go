package engage

import (
	"os"
	"path/filepath"
	"testing"
)

// shared returns ../shared/testdata/<sub> next to the module root, or skips
// the test: the fixtures and real transcripts live outside the repository
// and are never copied into it.
func shared(tb testing.TB, sub string) string {
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

func fixture(tb testing.TB, name string) string {
	tb.Helper()
	return filepath.Join(shared(tb, "pi-fixtures"), name)
}

func readFixture(tb testing.TB, name string) *Transcript {
	tb.Helper()
	tr, err := ReadFile(fixture(tb, name))
	if err != nil {
		tb.Fatalf("ReadFile(%s): %v", name, err)
	}
	return tr
}
