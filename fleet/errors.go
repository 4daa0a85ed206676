package fleet

import "errors"

// ErrNoTranscriptsDir is returned by Open when Config.TranscriptsDir is
// empty, missing or not a directory: nothing is connected.
var ErrNoTranscriptsDir = errors.New("no transcripts dir")

// ErrLockLost is returned by Reap for a key whose lock ended (its lease
// expired) before the key was judged and removed: the key is left as it
// is, for the next reap.
var ErrLockLost = errors.New("the key's lock ended before the reap was done")
