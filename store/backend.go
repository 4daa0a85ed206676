package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"sessdb/db"
	"sessdb/gates"
)

// A Backend keeps a store's keys: each key's transcript, and its record:
// everything known about that transcript (its identity and generation,
// the pi-version and venue stamps, the resume chain, the context reading)
// and the key's history. The Store's protocols, Resolve and Promote, run
// on any Backend and make every decision the ladder and the job contract
// call for; a Backend only reads a key consistently and changes it
// atomically.
//
// KeyDirs, the default, keeps a directory per key under a sessions root on
// one host, with the record in a bbolt file whose lock is the key's lock.
// Package fleet keeps the records in etcd and the transcripts on a shared
// directory, for many hosts. Package store/storetest holds the promises a
// Backend must keep, as one conformance suite: a Backend that passes it is
// a Backend.
//
// A Backend is safe for concurrent use by many goroutines and processes.
type Backend interface {
	// ID names the data the backend holds, as a ticket records it.
	ID() (string, error)
	// SameID reports whether id, from a ticket, names this backend's data;
	// two spellings of one sessions root are the same.
	SameID(id string) (bool, error)
	// View opens key for a resolve: one consistent view of the key until
	// it is closed (KeyDirs holds the key's shared lock; fleet reads at one
	// etcd revision). Legacy sidecars of a bound are read only when the
	// bound is set, as the legacy store did.
	View(key string, b gates.Bounds) (KeyView, error)
	// Begin opens key for a promotion of a job whose ticket's base is
	// base. A backend that guards its commit by revision (fleet) may take
	// the base as what the key holds, unread, and let the commit's compare
	// tell otherwise (ErrConflict); Begin is then called again for the
	// same job, and reads the key.
	Begin(key string, base Base) (KeyTxn, error)
}

// A ContextBackend is a Backend whose View and Begin take the caller's
// context, as database/sql/driver's QueryerContext is a Conn's: optional,
// and used by ResolveContext and PromoteContext when the Backend has it.
// Both return an error that wraps ctx's (errors.Is(err,
// context.Canceled) or context.DeadlineExceeded) when ctx ends what they
// wait for: KeyDirs' wait for the key's lock, a fleet's etcd requests.
// ctx bounds the call, and may bound what the KeyView or KeyTxn it
// returns waits for later: a KeyView's Lost (its verdict is thrown away
// once ctx is done) and a KeyTxn's Refuse (a refusal given up is
// promote-failed, and its retry decides again), with an error that wraps
// ctx's. A KeyTxn's HoldsRecord takes the caller's context by a method
// of its own (ContextKeyTxn). A KeyTxn's Commit never consults it: a
// commit is never half done because its caller gave up.
//
// For a Backend without it, the store looks at ctx before View and Begin
// and after them, and between the steps of its own: a cancel then ends
// the call once the step in flight returns.
type ContextBackend interface {
	Backend
	// ViewContext is View, its waits ended once ctx is done.
	ViewContext(ctx context.Context, key string, b gates.Bounds) (KeyView, error)
	// BeginContext is Begin, its waits ended once ctx is done.
	BeginContext(ctx context.Context, key string, base Base) (KeyTxn, error)
}

// A ContextKeyTxn is a KeyTxn whose HoldsRecord takes the caller's
// context, as a ContextBackend's View and Begin do: optional, and used by
// PromoteContext when the KeyTxn its Begin returned has it. Its read
// stops once ctx is done, with an error that wraps ctx's.
//
// For a KeyTxn without it, the store looks at ctx after HoldsRecord: an
// answer read once ctx had ended is thrown away, as a KeyView's Lost
// verdict is, and the promote is given up.
type ContextKeyTxn interface {
	KeyTxn
	// HoldsRecordContext is HoldsRecord, its read ended once ctx is done.
	HoldsRecordContext(ctx context.Context) (bool, error)
}

// holdsRecord is txn's HoldsRecord, bounded by ctx where the KeyTxn
// takes one (ContextKeyTxn), and given up (ctx's error, its answer thrown
// away) when ctx ended while it read: a read cut short says nothing of
// the file.
func holdsRecord(ctx context.Context, txn KeyTxn) (bool, error) {
	var holds bool
	var err error
	if t, ok := txn.(ContextKeyTxn); ok {
		holds, err = t.HoldsRecordContext(ctx)
	} else {
		holds, err = txn.HoldsRecord()
	}
	if cerr := ctx.Err(); cerr != nil {
		if err == nil || !errors.Is(err, cerr) {
			return false, cerr
		}
		return false, err
	}
	return holds, err
}

// view is the backend's View of key, bounded by ctx where the backend
// takes one (ContextBackend), never begun once ctx is done, and given up
// (the view closed) when ctx ended while it was opened.
func (s *Store) view(ctx context.Context, key string) (KeyView, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var v KeyView
	var err error
	if b, ok := s.backend.(ContextBackend); ok {
		v, err = b.ViewContext(ctx, key, s.opts.Bounds)
	} else {
		v, err = s.backend.View(key, s.opts.Bounds)
	}
	if err = givenUp(ctx, err, v); err != nil {
		return nil, err
	}
	return v, nil
}

// begin is the backend's Begin, as view is its View. A Begin that found
// the key locked (ErrKeyLocked) once ctx had ended is given up too: the
// wait may have been the caller's to end, and a Backend without
// BeginContext could not end it sooner.
func (s *Store) begin(ctx context.Context, key string, base Base) (KeyTxn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var t KeyTxn
	var err error
	if b, ok := s.backend.(ContextBackend); ok {
		t, err = b.BeginContext(ctx, key, base)
	} else {
		t, err = s.backend.Begin(key, base)
	}
	if err = givenUp(ctx, err, t); err != nil {
		return nil, err
	}
	return t, nil
}

// givenUp is err, the error of a step that opened c, once ctx is done: an
// error that wraps ctx's, c closed, and that says err but does not wrap
// it (a key found locked once ctx ended is no locked verdict). Before that
// it is err as it is.
func givenUp(ctx context.Context, err error, c interface{ Close() error }) error {
	cerr := ctx.Err()
	switch {
	case cerr == nil:
		return err
	case err == nil:
		c.Close()
		return cerr
	case errors.Is(err, cerr):
		return err
	}
	return fmt.Errorf("%w (and %v)", cerr, err)
}

// A dirBackend is a Backend whose keys' files lie under one directory,
// Dir, each key's in the directory named by the key (a sessions root; a
// fleet's transcripts dir). Resolve refuses a job dir that is Dir, lies
// inside a key's directory, or holds Dir (ErrJobDirInStore).
type dirBackend interface {
	Backend
	Dir() string
}

// A KeyView is one key as a resolve sees it. Its methods are called in
// order: Observe; then, if the ladder says resume, Source, copy, Accept
// (or Lost, when the copy could not read Source), repeated while Accept
// asks for a retry; then Close.
type KeyView interface {
	// Observe returns what the ladder needs, and a reason when the key
	// cold-starts before any rung is judged: absent (no key at all),
	// not-a-regular-file (the key dir is a link), locked (its lock was not
	// had in time), store-unavailable (the backend could not be reached),
	// meta-unreadable (a record that does not decode, when nothing else
	// of the key can be judged without it), transcript-replaced (the
	// transcript the record names is gone).
	Observe() (gates.Observation, gates.Reason)
	// Base is what the key holds, as a ticket records it, whatever the
	// verdict: a cold-started job promotes onto it.
	Base() Base
	// Source is the transcript to copy, and the most bytes worth copying
	// from it (one more than any identity it could match).
	Source() (*os.File, int64)
	// Accept judges a copy of size bytes with CRC32C sum just made from
	// Source.
	Accept(size int64, sum uint32) Acceptance
	// Lost names the cold start of a copy that failed reading Source
	// with err, or returns "" when that is a fault (Resolve then fails).
	// A transcript on shared storage that another host removed under the
	// copy (NFS reports ESTALE) is a cold start; a read error of a
	// transcript on the host's own disk is a fault. Base is read again
	// after it: the key may have moved on under the copy (reaped).
	Lost(err error) gates.Reason
	// Close releases the view (and the key's lock).
	Close() error
}

// Acceptance is what a KeyView makes of a copy: exactly one of Resume,
// Retry, or a Reason. The zero Acceptance is none of them: a cold start
// with no reason, which no KeyView may return.
type Acceptance struct {
	// Resume: the copy is what the key holds.
	Resume bool
	// Base is the base the copy was delivered as, with Resume: a crash's
	// fallback (the generation before a lost promotion) delivers another
	// than KeyView.Base, and the ticket must name what was delivered.
	Base Base
	// Retry: copy Source again, from another file.
	Retry bool
	// Reason, otherwise: the cold start.
	Reason gates.Reason
	// Unbased, with Reason: the cold start has no base. The key moved on
	// under the copy in a way the view cannot name as a base (a legacy
	// key migrated into meta.db meanwhile), so the job's cold run must not
	// replace what the key holds: its promote is superseded.
	Unbased bool
	// Err, instead of all of them: the copy could not be judged, for a
	// cause that is not the key's (no descriptor left for a legacy key's
	// venue re-check): a fault, which Resolve returns.
	Err error
}

// A KeyTxn is one key as a promotion sees it: under the key's exclusive
// lock (KeyDirs), or guarded by the record's revision (fleet). Its
// methods are called in order: State; then Refuse, or Stage and Commit;
// then Close.
type KeyTxn interface {
	// State returns the key once what a crash left is settled: its record,
	// its history (oldest first) and its base.
	State() (db.Sidecars, []db.HistoryEntry, Base)
	// HoldsRecord reports whether the key holds the transcript its record
	// names, as the record describes it: on one host the file in place,
	// in a fleet the file the record names. Promote asks it only of a
	// ticket's retry whose promotion is the record's generation: a key
	// whose file was lost, replaced or damaged since holds nothing of
	// that run. An error is a read that failed, which tells nothing.
	HoldsRecord() (bool, error)
	// Refuse records e, a refused promotion, in the key's history. A key
	// with no record yet keeps no history, and records nothing.
	Refuse(e db.HistoryEntry) error
	// Stage writes size bytes of src (and a newline when torn) durably as
	// the transcript of generation gen, not yet the key's, and returns its
	// identity.
	Stage(gen uint64, src io.ReaderAt, size int64, torn bool) (Staged, error)
	// Commit makes the staged transcript the key's, with the record rec
	// and the history entry e, in one atomic step, only if the key still
	// holds the base State returned: otherwise ErrConflict, and nothing
	// changed. When Commit returns nil the promotion is durable.
	Commit(st Staged, rec db.Sidecars, e db.HistoryEntry) error
	// Close releases the key, and removes a staged transcript that was
	// never committed.
	Close() error
}

// Staged is the identity of a transcript written by KeyTxn.Stage.
type Staged struct {
	Name string // where the backend keeps it
	// Size and CRC32C are of the bytes written, counted as they were
	// written: Promote compares CRC32C with its own read of the staged
	// file, so a file that changed between the two is never committed.
	Size   int64
	CRC32C uint32 // Castagnoli, of the same bytes
}

// cancelStep names the step a resolve or a promote was at when it was
// given up (its ctx done), in its log line (session_resolve_cancelled,
// session_promote_cancelled: "step"): where the caller's time went.
type cancelStep string

// The steps, in the order a call passes them (docs/job.md lists them).
const (
	stepJobDir   cancelStep = "job-dir"  // resolve: the job dir made ready
	stepKey      cancelStep = "key"      // the wait for the key: its lock, a fleet's etcd
	stepCopy     cancelStep = "copy"     // resolve: the ladder, the copy and its judgement
	stepTicket   cancelStep = "ticket"   // resolve: copied and judged, the ticket not yet written
	stepStaged   cancelStep = "staged"   // promote: the run's transcript opened and read
	stepContract cancelStep = "contract" // promote: the key had, the job contract judged
	stepRefusal  cancelStep = "refusal"  // promote: a refusal decided, and its record
	stepStage    cancelStep = "stage"    // promote: the new transcript written
	stepCommit   cancelStep = "commit"   // promote: the last look at ctx before the commit
)
