// Package engage decides, per request, whether a pi session's request goes
// out pruned, and measures what that decision costs in prompt-cache misses.
//
// Pruning engages when pi's usage-backed context estimate crosses pi's own
// compaction threshold (contextWindow - reserveTokens). Checked statelessly,
// a pruned request reports a smaller usage, the next estimate falls back
// below the threshold, that request goes out raw, and the two shapes
// alternate: every switch is a prompt-cache miss that bills the whole
// context again. Step makes engagement sticky: once crossed, a session stays
// engaged until a reset event (a compaction that ran, a session start).
//
// The package has three layers. Step is a pure function of typed values, with
// no I/O and no clock. Tracker holds Step's state per session for a
// long-running host. Read reproduces pi 0.58.3's estimate from a transcript
// file (the branch from the last entry, cut at its latest compaction, the
// last valid assistant usage plus ceil(chars/4) for what follows, unknown
// after a compaction until a fresh usage exists), and Transcript.Replay runs
// a recorded session request by request under both policies. The estimate
// itself is store/transcript's (Load, Estimator), the one the store also
// computes at promote; this package adds the policies on top.
//
// The promise: the estimate equals pi's to the token on every file pi loads
// (where pi's has a fraction, which takes usage counters no provider
// writes, it is the floor of pi's, and crosses a threshold exactly where
// pi's does; values pi never writes, on which pi computes NaN or throws,
// are read as store/transcript's caveat says), and Read streams, holding
// one line at a time and a record per entry, so memory grows with the
// number of entries, never with the text of their messages. The record
// holds the entry's place in the file and its id, and the model names are
// kept once each: about 100 bytes per entry in a transcript pi writes
// (8-character ids, a few models), 170 to 300 while it is read, far below
// the file's size. A hand-made file of the shortest entries a parentId can
// reach ("[]" lines in a version 1 file, which pi's migration gives ids;
// {"id":N} in a later one) costs the most per byte: about 5.5 times its
// size while read (45 MB for 8 MiB of "[]" lines); entries nothing can
// reach (no id, a falsy one) keep no record unless last. Long ids and
// model names are kept as they are. A Replay adds one Row per request
// (192 bytes on a 64-bit host), allocated once.
//
// Caveat: a transcript only records what its provider reported. A session
// recorded without pruning says nothing about the usage a pruned request
// would have reported; Options.PrunedRatio models it, and every figure that
// depends on that model is labelled as modelled.
package engage
