// Package storetest is the conformance suite of store.Backend: the store's
// promises, checked through its public API (Resolve, Promote, ReadTicket)
// and whatever the backend's harness can read back or damage. A backend
// that passes it is a backend.
//
// Run takes a Harness, which makes fresh, empty instances of the backend
// under test; every promise runs as a subtest on an instance of its own,
// with a clock the suite controls (store.Options.Now). What only some
// backends can have (a record damaged on disk, a key dir that is a link,
// a promotion interrupted between its steps, the legacy layout, a key
// whose resolves wait, a commit begun, a refusal decided) is reached
// through optional interfaces an Instance may implement (Damager,
// Interrupter, Planter, Respeller, Staller, Committer, Refuser); a promise
// that needs one the instance lacks, or a damage it reports as
// errors.ErrUnsupported, is skipped with a message naming the capability.
//
// RunModel is the suite's other half: random sequences of resolves,
// promotes (fresh, stale, retried, interrupted, of staged files grown,
// shrunk, emptied, replaced), clock advances, reaps, checks and, where the
// instance can, migrations to the older layout and back, each outcome
// compared with a reference model of the job contract (model.go); an
// Instance that is a Maintainer, a Migrator or a Mover gets those
// commands in its sequences too. Some operations run at once (jobs'
// promotes on one base, with a resolve, a reap and a check beside them),
// and the model accepts exactly the outcomes of some order of them; a
// Locker's instance gets jobs beside a key's lock another holder has, a
// Settler's an operator's check --accept and --quarantine, a Cutter's
// jobs while its metadata does not answer (modelconc.go); a Reviser's
// tickets must name their record's revision (a fleet's). Fixed sequences
// run first, every time (modelfixed.go): what the random ones reach only
// by chance, among them jobs on one base promoting at once, a Starter's
// lined up so that none holds the key before the others have set out.
//
// Caveat: the suite checks what a store does, not how fast, nor what a
// crash between a backend's own steps leaves (each backend's crash and
// fault tests do that); and its instances must not share state, or one
// promise's keys would meet another's.
package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/store"
)

// A Harness makes instances of the backend under test.
type Harness interface {
	// New returns a fresh instance holding no key, released when t ends.
	New(t *testing.T) Instance
}

// An Instance is one backend's data.
type Instance interface {
	// Open returns a store on the instance's data with opts, as given: the
	// suite sets Bounds and Now. Every store Open returns sees the same
	// keys.
	Open(opts store.Options) *store.Store
	// Record returns what the instance holds for key, as the store's
	// protocols read it: the record (the zero Sidecars for none) and the
	// history, oldest first.
	Record(key string) (db.Sidecars, []db.HistoryEntry, error)
}

// A Damager damages a key's stored state as a disk, an operator's mistake
// or a hostile process would. Damage returns errors.ErrUnsupported for a
// damage the backend cannot have.
type Damager interface {
	// Damage applies d to key, which the promise has just promoted (for
	// DamageLosePending, interrupted after its commit), and returns once
	// the damage is in place: the next Resolve must see it.
	Damage(key string, d Damage) error
}

// Damage names a damage.
type Damage string

// The damages, each with what a resolve of the key must say.
const (
	// DamageRecord: the key's record no longer decodes (meta-unreadable;
	// a promotion fails and writes nothing).
	DamageRecord Damage = "record"
	// DamageNewerSchema: the record was written by a newer sessdb
	// (meta-unreadable; never written over).
	DamageNewerSchema Damage = "newer-schema"
	// DamageTranscriptChanged: the transcript's bytes changed, its size
	// kept (transcript-replaced).
	DamageTranscriptChanged Damage = "transcript-changed"
	// DamageTranscriptGrown: bytes appended to the transcript
	// (transcript-replaced).
	DamageTranscriptGrown Damage = "transcript-grown"
	// DamageTranscriptEmptied: the transcript cut to 0 bytes (absent).
	DamageTranscriptEmptied Damage = "transcript-emptied"
	// DamageTranscriptLink: the transcript replaced by a symbolic link to a
	// file outside the store (not-a-regular-file; never followed).
	DamageTranscriptLink Damage = "transcript-link"
	// DamageTranscriptFIFO: the transcript replaced by a FIFO
	// (not-a-regular-file; nothing blocks).
	DamageTranscriptFIFO Damage = "transcript-fifo"
	// DamageTranscriptGone: the transcript removed, its record kept
	// (absent or transcript-replaced: the backend's own word for it).
	DamageTranscriptGone Damage = "transcript-gone"
	// DamageKeyLink: the key's directory replaced by a link to a directory
	// outside the store (not-a-regular-file on resolve and promote).
	DamageKeyLink Damage = "key-link"
	// DamageHistoryFull: the key's history moved, entries and order
	// kept, to end at the last sequence number its backend takes (a key
	// dir's 2^64-1, a fleet's last slot): no entry can follow, so every
	// promotion is promote-failed until check --repair (Maintainer)
	// numbers the history again. The record is not touched.
	DamageHistoryFull Damage = "history-full"
	// DamageLosePending: the new transcript of a promotion interrupted
	// after its commit (Interrupter, AfterCommit) lost before it took its
	// place: the key holds the generation before (the key-dir store's
	// pending temp).
	DamageLosePending Damage = "lose-pending"
	// DamageRecordGenZero: the record's transcript says generation 0, the
	// key's file and everything else kept (put by hand, or by another
	// binary): it describes no file of the key's (meta-unreadable; never
	// written over, though a generation of 0 is the job contract's key
	// with no transcript).
	DamageRecordGenZero Damage = "record-gen-zero"
	// DamageRecordWideCRC: the record's CRC32C has a bit above the 32nd
	// set, which no file's has (meta-unreadable; never written over).
	DamageRecordWideCRC Damage = "record-wide-crc"
	// DamageRecordNegativeSize: the record's size is -1 bytes, which no
	// file's is (meta-unreadable; never written over).
	DamageRecordNegativeSize Damage = "record-negative-size"
)

// An Interrupter stops the instance's next promotion at a point, as a
// crash or a lost answer would: the promotion returns promote-failed with
// an error, and the next one runs normally.
type Interrupter interface {
	// Interrupt arms the interruption at p for the instance's next
	// promotion only; the promotions after it run normally.
	Interrupt(p Point)
}

// Point is where an interrupted promotion stops.
type Point string

// The points of Interrupter.
const (
	// BeforeCommit: the new transcript written, nothing committed.
	BeforeCommit Point = "before-commit"
	// AfterCommit: committed, its answer lost to the caller.
	AfterCommit Point = "after-commit"
)

// A Planter writes a key as an older layout keeps it (the key-dir store's
// legacy sidecar files), for the read fallback. A nil field is a sidecar
// left out.
type Planter interface {
	// Plant writes key, which holds nothing yet, with transcript as its
	// transcript and s as its sidecars, as the older layout's writer left
	// them.
	Plant(key string, transcript []byte, s Stamps) error
}

// Stamps are a planted key's sidecars; a nil field is a sidecar left out.
type Stamps struct {
	PiVersion, Venue *string        // the pi-version and venue stamps
	Chain            *uint64        // the resume chain
	Context          *gates.Context // the last context reading
}

// A Respeller opens the instance's data under another spelling of its
// name (a link to the same directory): the same data, and the same ID.
type Respeller interface {
	// Respelled returns a store on the instance's data, with opts, reached
	// through another spelling of its name.
	Respelled(opts store.Options) *store.Store
}

// A promise is one subtest.
type promise struct {
	name string
	run  func(e *env)
}

// Run runs every promise on fresh instances of h, each as a subtest of t.
func Run(t *testing.T, h Harness) {
	for _, group := range [][]promise{resolvePromises, promotePromises, historyPromises, readingPromises, interruptPromises, damagePromises, legacyPromises, reapPromises, contextPromises, {raceContextPromise, hostileContextPromise, doneWithNoErrPromise, brokenContextPromise}} {
		for _, p := range group {
			t.Run(p.name, func(t *testing.T) { p.run(newEnv(t, h)) })
		}
	}
}

// clock is the suite's settable clock.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }

// start is where every instance's clock starts.
var start = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

// env is one promise's instance, clock and default store.
type env struct {
	t     *testing.T
	h     Harness
	inst  Instance
	clock *clock
	s     *store.Store
}

func newEnv(t *testing.T, h Harness) *env {
	e := &env{t: t, h: h, inst: h.New(t), clock: &clock{now: start}}
	e.s = e.with(gates.Bounds{})
	return e
}

// with is another store on the same data, with bounds b.
func (e *env) with(b gates.Bounds) *store.Store {
	return e.inst.Open(store.Options{Bounds: b, Now: e.clock.Now})
}

// record reads key back, failing the promise on error.
func (e *env) record(key string) (db.Sidecars, []db.HistoryEntry) {
	e.t.Helper()
	sc, h, err := e.inst.Record(key)
	if err != nil {
		e.t.Fatalf("read back %s: %v", key, err)
	}
	return sc, h
}

// damage damages key, or skips the promise when the backend cannot.
func (e *env) damage(key string, d Damage) {
	e.t.Helper()
	dm, ok := e.inst.(Damager)
	if !ok {
		e.t.Skip("the instance is no storetest.Damager")
	}
	err := dm.Damage(key, d)
	if errors.Is(err, errors.ErrUnsupported) {
		e.t.Skipf("the backend cannot have damage %q: %v", d, err)
	}
	if err != nil {
		e.t.Fatalf("damage %s %s: %v", key, d, err)
	}
}

// interrupt arms the next promotion's interruption, or skips.
func (e *env) interrupt(p Point) {
	e.t.Helper()
	in, ok := e.inst.(Interrupter)
	if !ok {
		e.t.Skip("the instance is no storetest.Interrupter")
	}
	in.Interrupt(p)
}

func (e *env) fatalf(format string, args ...any) {
	e.t.Helper()
	e.t.Fatalf(format, args...)
}

func describe(sess store.Session) string {
	return fmt.Sprintf("{resume %v, %s, %d bytes, base gen %d}", sess.Resume, sess.Reason, sess.Bytes, sess.Base.Gen)
}
