package faults

import (
	"errors"
	"strings"
	"testing"
)

// While a test runs beside others, arming a fault, or disarming one,
// panics: a fault is process-wide and would strike their protocols too.
// Once every such test is done (each done called, once or more), Set
// arms again.
func TestSetPanicsWhileATestRunsBeside(t *testing.T) {
	t.Cleanup(func() { Set(nil) })
	first, second := Beside(), Beside()
	for _, f := range []func(Point) error{func(Point) error { return nil }, nil} {
		if msg := setPanic(f); !strings.Contains(msg, "beside") {
			t.Errorf("Set(%v) with two tests beside = panic %q; want it to panic, naming why", f != nil, msg)
		}
	}
	first()
	first() // a second call of one done changes nothing
	if !Besides() {
		t.Fatal("Besides() = false with one test of two still beside")
	}
	if msg := setPanic(nil); msg == "" {
		t.Error("Set(nil) with one test beside did not panic")
	}
	second()
	if Besides() {
		t.Fatal("Besides() = true with every test beside done")
	}
	armed := errors.New("armed")
	if msg := setPanic(func(Point) error { return armed }); msg != "" {
		t.Errorf("Set once every test beside is done = panic %q; want it armed", msg)
	}
	if err := At(PromoteAfterCommit); err != armed {
		t.Errorf("At once armed = %v; want %v", err, armed)
	}
}

// setPanic calls Set(f) and returns its panic's message, or "".
func setPanic(f func(Point) error) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg, _ = r.(string)
			if msg == "" {
				msg = "(not a string)"
			}
		}
	}()
	Set(f)
	return ""
}
