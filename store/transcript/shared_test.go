package transcript

import (
	"testing"

	"sessdb/internal/sharedtest"
)

// shared returns ../shared/testdata/<sub>, or skips the test.
func shared(tb testing.TB, sub string) string { return sharedtest.Dir(tb, sub) }
