// Package store keeps resumable pi conversations. Resolve hands a job its
// conversation's transcript, or a 0-byte file (a cold start) with the
// reason from package gates; Promote takes a completed run's transcript
// back. Both run on any Backend: New keeps keys in directories under a
// sessions root on one host (below), NewOn takes another, such as package
// fleet's records in etcd with transcripts on shared storage. Every Backend
// passes one conformance suite, package store/storetest.
//
// The job contract. Resolve writes the job's ticket (a Session) to
// <job-dir>/session.ticket, outside the container's mount: the bytes
// delivered, their CRC32C, and the key's base (what it held). Promote
// commits at most one promotion per ticket, and only onto that base: a
// retried Promote repeats the first result, a job that lost the race to
// another's promotion is superseded, a staged file that does not begin
// with the bytes delivered is transcript-rewritten (pi only appends), and
// each refusal is recorded once in the key's history (a key with no record
// has none to record it in: its refusal is only logged). The context reading
// and model stored are pi's own, computed from the transcript as pi
// 0.58.3's getContextUsage reports them at the end of the run; the run's
// shape (answered, errored, unanswered, unchanged, or unknown where sessdb
// cannot read the transcript as pi does) is returned and recorded.
//
// The key-dir backend (New):
//
//	<root>/<key>/                  0700, key = 32 lowercase hex
//	  current.jsonl                the transcript, replaced only by rename
//	  meta.db                      bbolt: the record and the audit history (package db)
//	  .current.jsonl.tmp-<random>  a promotion in flight
//
// A key never resumes a transcript its record does not describe (size and
// CRC32C are checked during the copy, under the key's shared lock); a
// promotion that reported promoted survives a crash or a power cut (the
// temp, the commit and the directories are fsynced before Promote returns),
// and the transcript in place is always a whole old one or a whole new one;
// nothing under the root or the job dir is read or written through a link,
// and a FIFO never blocks. A key dir without meta.db is read with the
// legacy file-per-sidecar rules (package store/legacy), so a fleet half-way
// through a migration keeps resuming, until its first promotion writes
// meta.db. The operator's walks work on this backend only: Inspect (dump),
// Stats, Check (its repairs, Accept, Quarantine), Reap and RollForward
// (on a store made by NewOn they return ErrNoSessionsRoot, touching nothing);
// Inspect, Stats and Check without repair change nothing, not an mtime.
// Those that take a context (InspectWith, Stats, Check, ReapWith) stop
// at its end; a nil one is context.Background(), which never ends. A
// context of the caller's own type that breaks Go's contract is held to
// it, by these and by ResolveContext and PromoteContext: a Done closed
// while Err is nil is context.Canceled (see ResolveContext).
//
// ResolveContext and PromoteContext are Resolve and Promote given up once
// the caller's context is done: a resolve given up is the context's error,
// never a verdict, and leaves no staged file or ticket; a promote given up
// before its commit is promote-failed with it, the run kept for a retry,
// and from the commit on the context is not consulted.
//
// Read-path misses are verdicts, never errors; an error is a fault (I/O, an
// unusable job dir) or the caller's cancel. A Store is safe for concurrent
// use by many goroutines and processes.
//
// Caveat: the key's lock is bbolt's flock on meta.db, which is not reliable
// on a network filesystem: one sessions root belongs to one host, and hosts
// that share keys do so through package fleet. A legacy key's copy is
// checked against the file's identity (device, inode, size, mtime), as the
// legacy store did, not against a checksum: nothing records one until its
// first promotion or its migration. A ticket written before the job contract (no ticket id)
// promotes without the root and prefix checks, and with what base it has:
// the generation and bytes it resumed (from a legacy key, the bytes), or a
// key with no transcript; a locked one replaces nothing the key holds.
package store

import (
	"reflect"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/faults"
)

// File names inside a key dir and a job dir.
const (
	TranscriptName = "current.jsonl" // the transcript, in a key dir and in the staged dir
	StagedDirName  = "session"       // <job-dir>/session/current.jsonl is what the container sees
	tmpPrefix      = ".current.jsonl.tmp-"
)

// Options configures a Store. The zero value is usable: no bounds, the
// default lock timeout, a silent logger, the wall clock.
type Options struct {
	// Bounds are the ladder's limits (the caller applies the defaults).
	Bounds gates.Bounds
	// LockTimeout bounds every wait for a key's lock; 0 or less means the
	// db package's default (about 2 s), never "forever". It counts
	// nanoseconds, as every time.Duration does: LockTimeout: 2 is 2 ns,
	// not 2 s, a wait no contended key is had in, so that most of its
	// resolves are locked (cold starts) and most of its promotes locked
	// (70 and 75 of 90 with six goroutines on one key, none at the
	// default).
	LockTimeout time.Duration
	// Logger receives the store's events; the zero Logger writes nothing.
	Logger zerolog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Models looks up a model's context window for the reading a
	// promotion stores; nil means pi 0.58.3's built-in models. A non-nil
	// Models is the only table asked: a model it does not know has no
	// window, its reading is dropped (logged, session_reading_dropped) and
	// the context bound never judges the key until one is stored, so give
	// models.Load's Registry, which holds the built-in models too, or a
	// Windows that falls back to models.Builtin.
	Models Windows
}

// Windows looks up the context window of a model named "provider/id".
// Promote calls it from many goroutines at once when the Store is shared,
// so an implementation must be safe for concurrent use.
type Windows interface {
	// Window returns model's context window in tokens, and false when the
	// model is unknown: the reading is then stored as no measurement.
	Window(model string) (int64, bool)
}

// A Store is a sessions root. It is safe for concurrent use by many
// goroutines and many processes: every operation takes the key's lock.
type Store struct {
	root    string // the sessions root of the default backend; "" for another
	opts    Options
	disk    durability
	backend Backend
	// madeRoot is set when a promotion made the root (MadeRoot).
	madeRoot atomic.Bool
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
// walks (Inspect, Check, Reap, RollForward) work on the default one, and
// on this store return ErrNoSessionsRoot.
//
// A nil b, or a nil pointer in it (a *fleet.Backend that fleet.Open failed
// to make), is no backend: Resolve and Promote return ErrNoBackend.
func NewOn(b Backend, opts Options) *Store {
	s := newStore(opts)
	if b != nil {
		if v := reflect.ValueOf(b); v.Kind() == reflect.Pointer && v.IsNil() {
			b = nil
		}
	}
	s.backend = b
	return s
}

// newStore applies the Options defaults every constructor shares. Writes
// go to the real disk (diskWrites{}); the power-cut and swap tests set the
// unexported field to a journal or a hook, so no option a caller can pass
// weakens the fsyncs.
func newStore(opts Options) *Store {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Store{opts: opts, disk: diskWrites{}}
}

// Root returns the sessions root; "" for a store made by NewOn, which has
// none.
func (s *Store) Root() string { return s.root }

// dbOptions are the options every meta.db open of the store's takes.
func (s *Store) dbOptions() db.Options {
	return db.Options{LockTimeout: s.opts.LockTimeout, Now: s.opts.Now}
}

// fault is where a protocol step may be failed by the module's tests
// (package internal/faults); in production it returns nil.
func (s *Store) fault(p faults.Point) error { return faults.At(p) }
