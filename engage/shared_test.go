package engage

import (
	"path/filepath"
	"testing"

	"sessdb/internal/sharedtest"
)

// shared returns ../shared/testdata/<sub>, or skips the test.
func shared(tb testing.TB, sub string) string { return sharedtest.Dir(tb, sub) }

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
