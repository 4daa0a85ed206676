package fleet

import "errors"

// ErrNoTranscriptsDir is returned by Open when Config.TranscriptsDir is
// empty, missing or not a directory: nothing is connected.
var ErrNoTranscriptsDir = errors.New("no transcripts dir")

// ErrLockLost is returned by Reap for a key whose lock ended (its lease
// expired) before the key was judged and removed: the key is left as it
// is, for the next reap.
var ErrLockLost = errors.New("the key's lock ended before the reap was done")

// These errors are the causes of keys a migration (ToEtcd, FromEtcd)
// reports failed; the key is left as it was, and a re-run picks it up.
var (
	// errChanged is returned when a transcript changed while it was
	// copied: a worker is still running.
	errChanged = errors.New("changed while it was read (is a worker still running?)")

	// errNotSettled is returned when meta.db still names a promotion in
	// flight after the store's roll-forward.
	errNotSettled = errors.New("a pending promotion was not settled")

	// errMovedAside is returned when a key dir was moved aside (check
	// --quarantine, a reap) while its meta.db's lock was waited for.
	errMovedAside = errors.New("the key dir was moved aside while its lock was waited for")

	// errDirAtTranscript is returned when FromEtcd would write a key
	// dir's transcript where a directory is: no rename replaces one, and
	// only its owner can say what it holds.
	errDirAtTranscript = errors.New("a directory is in the way of the transcript (no rename replaces it, and it is never removed): move it out of the key dir and run again")
)

// ErrOtherFleet is returned by Claim, and by the store's writers and
// audits of a fleet (a promotion's Begin, Reap, Check, ToEtcd, FromEtcd),
// when the transcripts dir's mark (shared.MarkName) names another fleet,
// or this fleet has no ID in etcd though the dir is marked, or the mark
// is not one sessdb wrote, or a writer of a fleet with no record finds
// the dir unmarked and holding key dirs (another fleet's, from before
// marks), or a writer of a fleet with records and an ID finds it
// unmarked and holding no key dir (not the dir the fleet marked when it
// made its ID: an export not mounted, a mistyped path): the dir's files are judged by this fleet's
// records nowhere, and nothing in it is written or removed. An operator
// decides whose dir it is (see docs/fleet.md).
var ErrOtherFleet = errors.New("the transcripts dir is another fleet's")
