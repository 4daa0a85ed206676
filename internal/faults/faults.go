// Package faults names the steps of sessdb's protocols at which the
// module's own tests stop them, and lets only those tests arm them.
//
// A protocol calls At at each of its write boundaries (and Resolve at its
// read boundaries). In production nothing is armed and At returns nil. A
// test arms a function with Set; At then passes it the point, and a
// non-nil error it returns is treated as that step's I/O error. Tests use
// it to fail a protocol at a chosen step, to SIGKILL a child process
// there, or to change the filesystem under it.
//
// The package is internal: a program that uses sessdb cannot arm a fault.
// The armed function is process-wide, so a test that arms one runs alone:
// while a test runs beside others (t.Parallel, marked with Beside), Set
// panics rather than strike another test's protocol.
package faults

import (
	"sync"
	"sync/atomic"
)

// A Point names a step of a protocol, as "protocol/step".
type Point string

// The write boundaries of store.Promote, in protocol order. The last is
// after the promotion has landed, before Promote returns: a process
// killed there has promoted, and an error there is logged, not returned.
const (
	PromoteAfterTempWrite Point = "promote/after-temp-write" // the temp written, not fsynced
	PromoteAfterTempSync  Point = "promote/after-temp-fsync" // the temp durable, nothing committed
	PromoteAfterCommit    Point = "promote/after-commit"     // committed, not renamed: a reader serves the temp
	PromoteAfterRename    Point = "promote/after-rename"     // renamed, the directory not fsynced
	PromoteAfterDirSync   Point = "promote/after-dir-fsync"  // landed
)

// PromoteRefusalDecided is the window in a promote between its refusal
// (superseded, transcript-rewritten, run-incomplete) decided under the key
// and the refusal's record in the key's history: an error here is that
// record failing.
const PromoteRefusalDecided Point = "promote/refusal-decided"

// RollForwardTempRead is the read of a committed promotion's temp by the
// next writer's roll-forward (Promote, check --repair, accept): an error
// here is the temp's read failing.
const RollForwardTempRead Point = "roll-forward/temp-read"

// The read boundaries of store.Resolve, in order. Each is a window in
// which a key dir's name could be pointed elsewhere (the A,B,A swap):
// after the key dir's descriptor is opened; after the ladder's verdict,
// before the copy; after the copy, before the identity check and the
// lock's release. A fault here makes Resolve fail as on any I/O error,
// never a cold start: a cold start's reason says what the key is.
const (
	ResolveAfterKeyDirOpen Point = "resolve/after-key-dir-open" // the key dir's descriptor open
	ResolveAfterMetaOpen   Point = "resolve/after-meta-open"    // meta.db opened, or found absent; no sidecar read
	ResolveAfterGates      Point = "resolve/after-gates"        // the verdict given, nothing copied
	ResolveAfterCopy       Point = "resolve/after-copy"         // copied, not yet checked against the record
)

// StagedAfterUnlink is the window in a resolve between the unlink of
// whatever was at the job dir's staged name and the create of the fresh
// staged file (store's createStaged): a name made there (a hard link the
// job makes to a file it can see) must fail the create, never be opened and
// written through. An error here is the create failing.
const StagedAfterUnlink Point = "staged/after-unlink"

// TranscriptHeaderRead is the read of a key's transcript's first line by a
// reader (resolve, dump, check; on a fleet, of the generation its record
// names), to judge its header: an error here is that read failing.
const TranscriptHeaderRead Point = "transcript/header-read"

// LegacyIdentityLstat is a legacy key's identity check after its copy
// (resolve, dump, check): the lstat that finds current.jsonl still the file
// copied. An error here is that lstat failing.
const LegacyIdentityLstat Point = "legacy/identity-lstat"

// AcceptIdentityLstat is check --accept's look at current.jsonl's name
// after reading it whole (store's readIdentity): the lstat that finds the
// name still the file read. An error here is that lstat failing.
const AcceptIdentityLstat Point = "accept/identity-lstat"

// LegacySidecarRead is the read of one legacy sidecar file (store/legacy:
// venue, pi-version, resume-chain, context, in that order for a whole
// observation): an error here is that read failing on the file (an I/O
// error).
const LegacySidecarRead Point = "legacy/sidecar-read"

// PendingLook is the look (an lstat) at a committed promotion's temp that
// tells whether the promotion is still in flight (its temp at its name) or
// settled: an error here is that lstat failing otherwise than "gone".
const PendingLook Point = "pending/look"

// PendingAfterLook is the window between a reader's look at a committed
// promotion's temp, which found it at its name (in flight), and the open
// that serves it (resolve, dump, check): a temp removed there is gone when
// opened.
const PendingAfterLook Point = "pending/after-look"

// PendingTempCheck is a reader's read of a committed promotion's temp to
// tell whether it is whole (a resolve's ticket base: or does the key hold
// the generation before it?; check's pending-promotion finding; a dry run
// of a migration planning the roll-forward, store.PendingTempWhole): an
// error here is that read failing.
const PendingTempCheck Point = "pending/temp-check"

// BaseTranscriptRead is a writer's (Begin, check --repair's meta page
// written again) or a resolve's read of the transcript in place, to tell
// the generation a key holds where a committed promotion's temp was lost
// (lostPromotion), or whether meta.db fell back to a page that does not
// describe it (fellBack): a read of the whole file, which the caller's
// ctx stops. An error here is that read failing.
const BaseTranscriptRead Point = "base/transcript-read"

// HoldsRecordRead is the read, by a ticket's retry whose promotion is the
// key's record, of the file the record names, to tell whether the key still
// holds it (store.KeyTxn's HoldsRecord, on both backends): an error here is
// that read failing (an I/O error, a descriptor refused).
const HoldsRecordRead Point = "holds-record/read"

// The write boundaries of store.Reap, in protocol order (the key judged
// expired unlocked, nothing locked; under the key's lock, before anything
// is written; inside the reaping entry's transaction, where an error is
// its commit failing; the reaping entry committed; the key dir renamed to
// its reap-owned name; its transcript removed there), the one step of
// removing an empty key dir, of a quarantine's lock on the meta.db it
// opened, and of check's move-aside repair.
const (
	ReapBeforeLock       Point = "reap/before-lock"              // judged expired unlocked, the lock not yet taken
	ReapBeforeRemove     Point = "reap/before-remove"            // under the lock, nothing written
	ReapEntry            Point = "reap/entry"                    // the reaping entry's transaction, not yet committed
	ReapBeforeRename     Point = "reap/before-rename"            // the reaping entry committed
	ReapAfterRename      Point = "reap/after-rename"             // the key dir at its reap-owned name
	ReapAfterTranscript  Point = "reap/after-transcript-removed" // its transcript removed there
	ReapEmptyBeforeRmdir Point = "reap/empty-before-rmdir"       // an empty key dir judged idle past the TTL, not yet removed
	QuarantineBeforeLock Point = "quarantine/before-lock"        // meta.db opened, not yet locked
	RepairBeforeAside    Point = "repair/before-move-aside"      // meta.db locked, not yet moved
	RepairAfterAside     Point = "repair/after-move-aside"       // moved, the directory not fsynced
	RepairBeforeRenumber Point = "repair/before-renumber"        // meta.db locked, its history not yet numbered again
	RepairAfterRenumber  Point = "repair/after-renumber"         // the history numbered again, committed
)

// ReapedBeforeGiveBits is a reap or check --repair finishing a reap-owned
// dir: a look found the dir, or its meta.db, its runner's own and lacking
// the owner's write bit, which is not given yet (an error here gives none).
const ReapedBeforeGiveBits Point = "reaped/before-give-bits"

// FsatRemoveBeforeDirLook is fsat.Remove of a directory: the unlink said
// the name is one (EISDIR; EPERM elsewhere), and the name is about to be
// looked at again before its rmdir, where a rival remover (a reap finishing
// a reap-owned dir while its own reap removes it) may have got there first.
const FsatRemoveBeforeDirLook Point = "fsat/remove-before-dir-look"

// SweepUnlockedBeforeList is the stray-temp sweep of a key reap keeps,
// where the key had no meta.db (no lock to take) when the sweep looked: the
// temps about to be listed again and removed.
const SweepUnlockedBeforeList Point = "sweep/unlocked-before-list"

// The steps of a meta.db open (package db's OpenReader and OpenWriter, so
// every protocol's) at which the key dir or its meta.db can be swapped
// under it (§6.1 of docs/RELIABILITY.md), and where a writer's open
// begins, nothing held (db-open/writer: RunModel's races line writers up
// there, Line): the key dir's descriptor
// fstat'ed and its in-process lock had, meta.db neither looked at nor
// made; meta.db opened and judged a regular file, its flock (the key dir's
// turnstile first) not yet taken. A fault here fails the open as an I/O
// error would. db-open/before-meta is reached once per open,
// db-open/before-flock once per attempt: an open retries, at most twice,
// when meta.db was replaced under it. db-open/own-file-before-rename and
// db-open/own-file-after-rename are reached only by a writer whose meta.db
// has more than one name: its copy is written and fsynced, not yet renamed
// over meta.db; renamed over it, the directory not yet fsynced.
const (
	DBOpenWriter          Point = "db-open/writer"                 // a writer's open begun: nothing held, its lock wait not begun
	DBOpenBeforeMeta      Point = "db-open/before-meta"            // the key dir held, meta.db not looked at
	DBOpenBeforeLock      Point = "db-open/before-flock"           // meta.db opened, not locked
	DBOwnFileBeforeRename Point = "db-open/own-file-before-rename" // a hard-linked meta.db's copy made, not in place
	DBOwnFileAfterRename  Point = "db-open/own-file-after-rename"  // the copy renamed over meta.db, the dir not fsynced
)

// DBCreateBeforeLink and DBCreateLinked are steps of a new meta.db's
// creation, while its temp's flock is held: the temp whole and durable,
// not yet linked to meta.db; linked, so that the one file has two names,
// the temp's not yet removed. A fault at either fails the open; the temp's
// name is removed, and a meta.db linked stays (whole, with no record).
const (
	DBCreateBeforeLink Point = "db-create/before-link"
	DBCreateLinked     Point = "db-create/linked"
)

// CheckAfterKeyOpen is where check has opened a key dir (and meta.db, or
// found it damaged or absent) and has read nothing in it yet: a reap may
// remove the dir from then on. A fault here is reported as unreadable.
const CheckAfterKeyOpen Point = "check/after-key-open"

// CheckAfterKeyListed is where check has listed a key dir (and, where it
// holds no lock of the key, looked whether a writer holds it) and has
// looked at no entry yet. A fault here is reported as unreadable.
const CheckAfterKeyListed Point = "check/after-key-listed"

// CheckReapedDirOpen is where check (or dump) has opened a reap-owned
// dir and taken no lock of it yet: a reap, or check --repair, may move it
// back to its key from then on (a promotion landed in it). A fault here
// is reported as the dir's unreadable meta.db.
const CheckReapedDirOpen Point = "check/reaped-dir-open"

// ReapedNoMeta is where a look at a reap-owned dir (check's, dump's, or
// a reap's or check --repair's about to finish it) has found no meta.db
// in it, and has not yet waited for a reap at work on it (its two-step
// rename, its last steps: meta.db unlinked, the dir not yet). A fault
// here is the look's error: check and dump report the dir's meta.db
// unreadable; a reap or check --repair leaves the dir as it is.
const ReapedNoMeta Point = "reaped/no-meta"

// CheckAfterKeyEntries is where check has looked at every entry of a key
// dir and judged none of meta.db's contents yet: for a key whose lock it
// does not hold (no meta.db, or one it could not open), a writer may come
// and go from then on. A fault here is reported as unreadable.
const CheckAfterKeyEntries Point = "check/after-key-entries"

// DeepCheckAfterCheck is where a deep check (store.DeepCheckDB) has run
// bbolt's check, or failed to open meta.db, and has not yet looked again
// at which file meta.db's name leads to. A fault here is that look's I/O
// error.
const DeepCheckAfterCheck Point = "deep-check/after-check"

// The write boundaries of migrate, in each direction.
const (
	ToDBLocked    Point = "to-db/after-lock"      // meta.db open (maybe just created), nothing committed
	ToDBCommitted Point = "to-db/after-commit"    // the values are in meta.db
	ToDBRemoved   Point = "to-db/after-remove"    // after each legacy file removed
	ToDBDirSynced Point = "to-db/after-dir-fsync" // the removals are durable

	ToLegacyUnlocked      Point = "to-legacy/unlocked"           // the key's lock let go for the store's roll-forward, nothing written
	ToLegacyRolledForward Point = "to-legacy/after-roll-forward" // a pending promotion settled
	ToLegacyTemps         Point = "to-legacy/after-temps"        // every legacy temp written and fsynced
	ToLegacyRenamed       Point = "to-legacy/after-rename"       // after each temp renamed into place
	ToLegacyMtime         Point = "to-legacy/after-mtime"        // transcript mtime set and fsynced
	ToLegacySynced        Point = "to-legacy/after-dir-fsync"    // the legacy files are durable
	ToLegacyDBRemoved     Point = "to-legacy/after-remove-db"    // meta.db unlinked, not yet fsynced
)

// MigrateScanLstat is migrate's look (an lstat) at each legacy entry a
// key dir's listing gave: its transcript, lock, temps and sidecars. An
// error here is that lstat failing otherwise than "gone".
const MigrateScanLstat Point = "migrate-scan/lstat"

var armed atomic.Pointer[func(Point) error]

// At is called by a protocol at point p. It returns the armed function's
// error, or nil when nothing is armed.
func At(p Point) error {
	if f := armed.Load(); f != nil && *f != nil {
		return (*f)(p)
	}
	return nil
}

// Set arms f, or disarms when f is nil. A test that sets one clears it
// when it is done (t.Cleanup), so the next test starts disarmed. It
// panics while a test runs beside others (see Beside).
func Set(f func(Point) error) {
	if Besides() {
		panic("faults.Set while tests run beside each other: a fault armed strikes every test's protocol; a test that arms one must not be parallel")
	}
	if f == nil {
		armed.Store(nil)
		return
	}
	armed.Store(&f)
}

// besides counts the tests running beside others.
var besides atomic.Int32

// Beside marks a test that runs beside others (t.Parallel), until done is
// called: meanwhile Set panics, as does every other process-wide test
// seam that asks Besides. Go runs the parallel tests of a package after
// its others have ended, so only such a test, or a helper it calls, can
// reach Set then.
func Beside() (done func()) {
	besides.Add(1)
	var once sync.Once
	return func() { once.Do(func() { besides.Add(-1) }) }
}

// Besides reports whether a test runs beside others (see Beside).
func Besides() bool { return besides.Load() > 0 }

// Line arms a fault that lines up the first n to pass p: each waits there
// for the others, until all n are there or left (or done) is called, as
// each of them returns, so that none waits for one that will never come.
// done also disarms. RunModel's races (a storetest.Starter) line a
// key's promotions up with it at DBOpenWriter, where each sets out to
// take the key for writing, holding nothing.
func Line(p Point, n int) (left, done func()) {
	var mu sync.Mutex
	arrived := 0
	line := make(chan struct{})
	var once sync.Once
	open := func() { once.Do(func() { close(line) }) }
	Set(func(q Point) error {
		if q != p {
			return nil
		}
		mu.Lock()
		arrived++
		held := arrived <= n
		if arrived == n {
			open()
		}
		mu.Unlock()
		if held {
			<-line
		}
		return nil
	})
	return open, func() { open(); Set(nil) }
}

// The write boundaries of fleet's migration between a sessions root and
// etcd, in each direction. ToEtcd: under the key dir's lock, a pending
// promotion settled; the transcript written to the shared directory (no
// record names it yet); the record and history committed to etcd.
// FromEtcd: the key dir and its meta.db made and locked, nothing written;
// the transcript's temp written and fsynced; the record, history and
// pending entry committed to meta.db; the temp renamed to current.jsonl;
// the rename made durable.
const (
	ToEtcdRolledForward Point = "to-etcd/after-roll-forward"
	ToEtcdWritten       Point = "to-etcd/after-shared-write"
	ToEtcdCommitted     Point = "to-etcd/after-commit"

	FromEtcdLocked    Point = "from-etcd/after-lock"
	FromEtcdTemp      Point = "from-etcd/after-temp"
	FromEtcdCommitted Point = "from-etcd/after-commit"
	FromEtcdRenamed   Point = "from-etcd/after-rename"
	FromEtcdSynced    Point = "from-etcd/after-dir-fsync"
)

// FleetMigrateLegacyLstat is the fleet migration's look (an lstat) at
// each legacy file a key dir may hold (its transcript and sidecars), which
// tells a key dir still in the legacy layout (FromEtcd's destination,
// ToEtcd's source without a record): an error here is that lstat failing
// otherwise than "gone".
const FleetMigrateLegacyLstat Point = "fleet-migrate/legacy-lstat"

// FleetMigrateChecksum is each read of a file the fleet's migrations
// read whole for its size and CRC32C (fleet's checksum: ToEtcd's key
// dir's transcript, or a dry run's promotion temp; FromEtcd's generation
// in the transcripts dir, and the key dir's transcript in place), once a
// chunk, before it: an error here is that read failing. The caller's ctx
// stops the read between chunks.
const FleetMigrateChecksum Point = "fleet-migrate/checksum"

// FleetMigrateDescends is each read of the fleet's migrations' look at
// whether a generation file in the transcripts dir begins with another
// generation's bytes (fleet's beginsWith, where a history does not tell
// whether one descends from the other), once a chunk, before it: an
// error here is that read failing. The caller's ctx stops the read
// between chunks.
const FleetMigrateDescends Point = "fleet-migrate/descends"

// The steps of a fleet's transcript write (fleet/shared.Write) at which a
// network filesystem reports a write that failed (EIO, ENOSPC, EDQUOT):
// NFS sends the data at the fsync, or at the close, not at the write.
const (
	SharedWriteSync  Point = "shared-write/fsync" // the temp written, its fsync returned
	SharedWriteClose Point = "shared-write/close" // the temp fsynced, its close returned
)

// SharedDirStat is the stat of a fleet's transcripts dir itself
// (fleet/shared.DirErr, and fleet.Open's check that it is a directory): an
// error here is the export gone stale (ESTALE), which no test can make
// without root.
const SharedDirStat Point = "shared/dir-stat"

// SharedMarkRead is the read of a fleet's transcripts dir's mark
// (fleet/shared's ReadMark, and WriteMark's reads of the mark before it
// writes one and after its rename met another's): an error here is that
// read failing (EIO, or ESTALE: the mark's handle gone stale), which no
// test can make without root.
const SharedMarkRead Point = "shared/mark-read"

// EtcdLockGranted is the step of a fleet's key lock (fleet/etcdmeta.Lock)
// after its lease is granted and before the mutex is asked for: etcd lost
// there leaves a lease and a session to end.
const EtcdLockGranted Point = "etcd-lock/granted"

// The steps of each try of a fleet's guarded write (fleet/etcdmeta's Put
// and AppendHistory): before it takes its guess of the key's newest
// history slot; with its guess taken (an append's read of the key done),
// before its transaction is sent; and after its transaction landed,
// before its answer is returned. A test holds a hedged try at one while
// its sibling runs, lines two tries up on one guess, and stands in for an
// answer that comes late.
const (
	EtcdWriteBeforeGuess Point = "etcd-write/before-guess"
	EtcdWriteAfterGuess  Point = "etcd-write/after-guess"
	EtcdWriteAfterCommit Point = "etcd-write/after-commit"
)

// EtcdRenumberBeforeCommit is the step of a fleet's renumber
// (fleet/etcdmeta.RenumberHistory) between its read of the key and its
// guarded commit: a test changes the key there, as a writer that takes no
// lock can, and the commit's compares must see it.
const EtcdRenumberBeforeCommit Point = "etcd-renumber/before-commit"
