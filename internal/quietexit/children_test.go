package quietexit

import (
	"os"
	"testing"
)

// Children keeps what GORACE held for the children: a run's halt_on_error
// or log_path reaches them with the sleep taken off, and a run that asks
// for the sleep keeps it.
func TestChildrenKeepsGORACE(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"halt_on_error=1 log_path=/tmp/r", "halt_on_error=1 log_path=/tmp/r atexit_sleep_ms=0"},
		{"atexit_sleep_ms=250", "atexit_sleep_ms=250"},
	} {
		t.Setenv("GORACE", c.in)
		Children()
		if got := os.Getenv("GORACE"); got != c.want {
			t.Errorf("GORACE %q: Children left %q, want %q", c.in, got, c.want)
		}
	}
}
