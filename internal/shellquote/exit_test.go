package shellquote

import (
	"testing"

	"sessdb/internal/quietexit"
)

// TestMain ends a passing -race run without the race detector's second
// of sleep at exit where no test left a goroutine running
// (internal/quietexit).
func TestMain(m *testing.M) { quietexit.Exit(m.Run()) }
