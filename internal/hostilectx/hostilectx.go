// Package hostilectx holds contexts that break Go's contract, for the
// tests of every package whose exported entries must take them (see
// internal/callerctx). Nothing but tests imports it.
package hostilectx

import "context"

// DoneNoErr breaks Go's contract: its Done is closed while its Err is nil
// (a caller's own Context type).
type DoneNoErr struct{ context.Context }

// Done is a closed channel.
func (DoneNoErr) Done() <-chan struct{} { c := make(chan struct{}); close(c); return c }

// Err is nil, though Done is closed.
func (DoneNoErr) Err() error { return nil }

// ErrPanics panics in Err, as a struct embedding a nil Context does.
type ErrPanics struct{ context.Context }

// Done is a closed channel.
func (ErrPanics) Done() <-chan struct{} { c := make(chan struct{}); close(c); return c }

// Err panics.
func (ErrPanics) Err() error { panic("the caller's Err") }
