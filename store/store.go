// Package store keeps resumable pi conversations under a sessions root, one
// key directory per conversation:
//
//	<root>/<key>/                  0700, key = 32 lowercase hex
//	  current.jsonl                the transcript, replaced only by rename
//	  meta.db                      bbolt: sidecars and audit history (package db)
//	  .current.jsonl.tmp-<random>  a promotion in flight
//
// Resolve stages a key's transcript for a job, or a 0-byte file (a cold
// start), and names why with a reason from package gates. Promote takes a
// completed run's transcript back. Reap removes expired keys.
//
// What is guaranteed: a key never resumes a transcript that its sidecars do
// not describe (size and CRC32C are checked during the copy); a promotion
// that reported promoted survives a crash (every file, the commit and the
// directory are fsynced before Promote returns); the transcript in place is
// always a whole old one or a whole new one; nothing under the root is read
// or written through a link, and a FIFO never blocks. Read-path misses are
// verdicts, never errors; errors are faults (I/O, a corrupt job dir).
//
// A key dir without meta.db is read with the legacy file-per-sidecar rules
// (package store/legacy), so a fleet half-way through a migration keeps
// resuming; the first promotion writes meta.db, which from then on is
// authoritative.
//
// Caveat: the key's lock is bbolt's flock on meta.db. flock is not reliable
// on network filesystems; one sessions root belongs to one host.
package store

import (
	"time"

	"github.com/rs/zerolog"

	"sessdb/gates"
)

// File names inside a key dir and a job dir.
const (
	TranscriptName = "current.jsonl"
	StagedDirName  = "session" // <job-dir>/session/current.jsonl is what the container sees
	tmpPrefix      = ".current.jsonl.tmp-"
)

// Options configures a Store. The zero value is usable: no bounds, the
// default lock timeout, a silent logger, the wall clock.
type Options struct {
	// Bounds are the ladder's limits (the caller applies the defaults).
	Bounds gates.Bounds
	// LockTimeout bounds every wait for a key's lock; 0 means the db
	// package's default (about 2 s), never "forever".
	LockTimeout time.Duration
	// Logger receives the store's events; the zero Logger writes nothing.
	Logger zerolog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Models looks up a model's context window for the reading a
	// promotion stores; nil means pi 0.58.3's built-in models.
	Models Windows
	// Fault, when non-nil, is called at every write boundary of Promote,
	// Reap and the move-aside repair, and at the read boundaries of Resolve
	// (not of dump or check, which share Resolve's reader); a non-nil error
	// it returns is treated as that step's I/O error. At a read boundary
	// that makes Resolve fail as it does on any I/O error: an error, the
	// staged file removed, the key's lock released; never a cold start, since
	// a cold start's reason says what the key is, and a fault says nothing
	// about the key. Tests use it to crash or fail a protocol at a chosen
	// step, or to change the filesystem under it (TestKeyDirSwap*);
	// production leaves it nil.
	Fault func(FaultPoint) error
}

// Windows looks up the context window of a model named "provider/id".
type Windows interface {
	Window(model string) (int64, bool)
}

// FaultPoint names a write boundary of a protocol (see Options.Fault).
type FaultPoint string

// The write boundaries of Promote, in protocol order, of Reap, and of
// check's move-aside repair. Promote's last is after the promotion has
// landed, before it returns: a process killed there has promoted.
const (
	FaultAfterTempWrite      FaultPoint = "promote/after-temp-write"
	FaultAfterTempSync       FaultPoint = "promote/after-temp-fsync"
	FaultAfterCommit         FaultPoint = "promote/after-commit"
	FaultAfterRename         FaultPoint = "promote/after-rename"
	FaultAfterDirSync        FaultPoint = "promote/after-dir-fsync" // landed: an error here is logged, not returned
	FaultReapBeforeRemove    FaultPoint = "reap/before-remove"
	FaultReapAfterTranscript FaultPoint = "reap/after-transcript-removed"
	FaultRepairBeforeAside   FaultPoint = "repair/before-move-aside"
	FaultRepairAfterAside    FaultPoint = "repair/after-move-aside"
)

// The read boundaries of Resolve, in order. Each is a window in which the
// key dir's name could be pointed elsewhere (the A,B,A swap): after the key
// dir's descriptor is opened and before meta.db and the transcript are
// opened through it; after the ladder's verdict and before the copy; after
// the copy and before the post-copy checks and the lock's release.
// Resolve works from the descriptor alone after the first, so a swap at any
// of them changes nothing it reads.
const (
	FaultResolveAfterKeyDirOpen FaultPoint = "resolve/after-key-dir-open"
	FaultResolveAfterGates      FaultPoint = "resolve/after-gates"
	FaultResolveAfterCopy       FaultPoint = "resolve/after-copy"
)

// A Store is a sessions root. It is safe for concurrent use by many
// goroutines and many processes: every operation takes the key's lock.
type Store struct {
	root string
	opts Options
	disk durability
}

// New returns the store rooted at root. It touches nothing: a missing root
// is a cold start for every key until the first promotion creates it.
func New(root string, opts Options) (*Store, error) {
	if root == "" {
		return nil, ErrSessionsDirUnset
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Store{root: root, opts: opts, disk: diskWrites{}}, nil
}

// Root returns the sessions root.
func (s *Store) Root() string { return s.root }

func (s *Store) fault(p FaultPoint) error {
	if s.opts.Fault == nil {
		return nil
	}
	return s.opts.Fault(p)
}
