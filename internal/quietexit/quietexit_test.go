package quietexit

import "testing"

func TestWith(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", "atexit_sleep_ms=0"},
		{"halt_on_error=1", "halt_on_error=1 atexit_sleep_ms=0"},
		{"atexit_sleep_ms=500", "atexit_sleep_ms=500"},
		{"log_path=/tmp/r atexit_sleep_ms=0", "log_path=/tmp/r atexit_sleep_ms=0"},
		{"history_size=3 ", "history_size=3 atexit_sleep_ms=0"},
	} {
		if got := With(c.in); got != c.want {
			t.Errorf("With(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
