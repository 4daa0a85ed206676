package main

import (
	"flag"
	"fmt"
	"time"

	"sessdb/store"
)

// atFlag is --at TIME: judge as if it were TIME, so that a root's output
// does not depend on when it is read. The shipped sample's clock is
// 2026-11-29T09:00:00Z (internal/sample.Time): judged --at an hour later,
// it shows what the README shows, on any date.
type atFlag struct{ raw string }

func bindAt(fs *flag.FlagSet) *atFlag {
	a := &atFlag{}
	fs.StringVar(&a.raw, "at", "", "judge as if it were `TIME` (RFC 3339, e.g. 2026-11-29T10:00:00Z) instead of now")
	return a
}

// now returns the instant to judge at, and the store option that makes
// the store judge at it too.
func (a *atFlag) now() (func() time.Time, func(*store.Options), error) {
	if a.raw == "" {
		return clock, func(*store.Options) {}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, a.raw)
	if err != nil {
		return nil, nil, fmt.Errorf("--at: %s is not an RFC 3339 time (2026-11-29T10:00:00Z)", brief(a.raw))
	}
	at := func() time.Time { return t }
	return at, func(o *store.Options) { o.Now = at }, nil
}
