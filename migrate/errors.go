package migrate

import "errors"

// The errors of migrate. A key that meets one is a Failed report whose
// Cause reads "op path: err"; only WriteLegacySidecars returns one to its
// caller, wrapped in an *os.PathError. Test for them with errors.Is.

// This error can be returned when legacy files are written (ToLegacy,
// WriteLegacySidecars), before any of them is renamed into place.
var (
	// ErrNotLegacy is returned when a value cannot be written in the
	// legacy formats so that the legacy reader reads back what it means:
	// a model stamp with a space in it, a chain beyond 2^53 that no
	// double spells, a stamp the reader would trim or refuse.
	ErrNotLegacy = errors.New("the legacy reader would not read it back the same")
)

// These errors can be returned while a key dir is read for a plan, in
// either direction. The key is left as it was.
var (
	// errChanged is returned when current.jsonl changed while its
	// identity was computed: a worker is still running.
	errChanged = errors.New("changed while it was read (is a worker still running?)")

	// errNotSettled is returned when meta.db still names a promotion in
	// flight after the store's roll-forward: the rollback would write
	// legacy files for a transcript that is not in place.
	errNotSettled = errors.New("a pending promotion was not settled")

	// errFullDir is returned when a directory with entries is where
	// ToLegacy puts or removes a legacy file: it is never removed.
	errFullDir = errors.New("a directory with entries is in the way of the legacy file (it is never removed): move it out of the key dir and run again")
)
