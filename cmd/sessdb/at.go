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
//
// Given empty ("$AT" with AT unset) it is an error, not now: the caller
// asked for the verdicts at a time, and would read today's without a word.
type atFlag struct {
	raw   string
	given bool
}

func (a *atFlag) String() string {
	if a == nil {
		return ""
	}
	return a.raw
}

func (a *atFlag) Set(s string) error { a.raw, a.given = s, true; return nil }

func bindAt(fs *flag.FlagSet) *atFlag {
	a := &atFlag{}
	fs.Var(a, "at", "judge as if it were `TIME` (RFC 3339, e.g. 2026-11-29T10:00:00Z) instead of now")
	return a
}

// now returns the instant to judge at, and the store option that makes
// the store judge at it too.
func (a *atFlag) now() (func() time.Time, func(*store.Options), error) {
	if !a.given {
		return clock, func(*store.Options) {}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, a.raw)
	if err != nil {
		return nil, nil, fmt.Errorf("--at: %s is not an RFC 3339 time (2026-11-29T10:00:00Z)", brief(a.raw))
	}
	at := func() time.Time { return t }
	return at, func(o *store.Options) { o.Now = at }, nil
}
