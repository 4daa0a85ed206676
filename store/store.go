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

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/faults"
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
}

// Windows looks up the context window of a model named "provider/id".
type Windows interface {
	Window(model string) (int64, bool)
}

// A Store is a sessions root. It is safe for concurrent use by many
// goroutines and many processes: every operation takes the key's lock.
type Store struct {
	root    string // the sessions root of the default backend; "" for another
	opts    Options
	disk    durability
	backend Backend
}

// New returns the store rooted at root. It touches nothing: a missing root
// is a cold start for every key until the first promotion creates it.
func New(root string, opts Options) (*Store, error) {
	if root == "" {
		return nil, ErrSessionsDirUnset
	}
	s := newStore(opts)
	s.root = root
	s.backend = keyDirs{s}
	return s, nil
}

// NewOn returns a store whose keys live in b, such as a fleet on etcd
// (package fleet). Resolve and Promote work on any backend; the operator's
// walks (Inspect, Check, Reap, RollForward) work on the default one.
func NewOn(b Backend, opts Options) *Store {
	s := newStore(opts)
	s.backend = b
	return s
}

func newStore(opts Options) *Store {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Store{opts: opts, disk: diskWrites{}}
}

// Root returns the sessions root.
func (s *Store) Root() string { return s.root }

// dbOptions are the options every meta.db open of the store's takes.
func (s *Store) dbOptions() db.Options {
	return db.Options{LockTimeout: s.opts.LockTimeout, Now: s.opts.Now}
}

// fault is where a protocol step may be failed by the module's tests
// (package internal/faults); in production it returns nil.
func (s *Store) fault(p faults.Point) error { return faults.At(p) }
