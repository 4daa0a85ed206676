// Package fleet is a store.Backend for many workers on many hosts that
// share one sessions store: each key's record and audit history live in
// etcd (package fleet/etcdmeta), its transcripts as write-once files in a
// directory every worker mounts (package fleet/shared). store.NewOn runs
// Resolve and Promote on it with the same ladder, reasons, job contract
// and JSON as the key-dir store; package store/storetest's conformance
// suite runs on both. A Backend is a store.ContextBackend: the store's
// ResolveContext and PromoteContext end its etcd requests, each still
// within the request timeout, once the caller's context is done, up to a
// promotion's commit, which is bounded by the request timeout alone.
//
// # A key
//
//	etcd <prefix>/record/<key>            the record: identity of the generation in
//	                                        place (gen, size, CRC32C, promoted_at, file),
//	                                        pi-version, venue, resume-chain, context
//	etcd <prefix>/history/<key>/<seq>     the newest 64 history entries
//	<transcripts-dir>/<key>/<gen>-<random>.jsonl   one write-once file per generation
//
// The store's ID for a fleet, which every ticket records, is
// "<transcripts-dir> (etcd prefix <prefix>)": a ticket issued on another
// directory or another prefix is refused before anything is written.
//
// # Resolve
//
// One linearizable etcd read gives the record at one revision. The
// generation it names is opened (never through a link), judged by the
// ladder with the record's stamps, copied, and the copy's size and CRC32C
// must be the record's. What is judged and what is copied are that one
// generation, whatever promotions land meanwhile: files are never
// overwritten. A record that does not decode, or was written by a newer
// sessdb, is meta-unreadable; etcd not answering within the request
// timeout is store-unavailable (a new reason, exit 0 like every verdict).
//
// A generation the record names that is gone, at the open, at the fstat
// after it, at the read of its first line or under the copy (NFS reports
// ESTALE when another host removed it; a call that fails otherwise counts
// when nothing is at the file's name any more), is transcript-replaced: the
// bytes the record describes cannot be delivered, which is what that
// reason names, and in the one way sessdb itself makes it happen (reap
// removed a generation superseded longer than its grace period ago, under
// a resolve slower than that) the transcript really was replaced. It is
// never a torn copy, and absent only where the record, read again, names
// nothing any more (a reap removed the key meanwhile: it deletes the
// record, then the files), as a resolve after the reap finds it, with no
// base, so that the job's run makes the key anew. Unless the transcripts dir itself is gone, not a directory or
// stale (ESTALE: the export went away), which a stat of it tells once a
// generation failed so (never on the path that finds the file): that is
// store-unavailable, the cause logged once, with no base, as after etcd's
// silence: the job's cold run never replaces a conversation that may be
// whole on the export, its promote superseded once the dir is back.
// A call that fails on a file still at its name (a soft mount's EIO after
// its timeout, the process out of descriptors) is a fault, as a failed
// read of a key dir's transcript is: never a cold start on the record's
// base, whose promotion would replace a conversation that is whole. Dump,
// check and reap stop there with shared.ErrDirUnavailable naming the dir,
// report no key missing for it and remove nothing more.
//
// # Promote
//
// A ticket carries the record's mod revision as its base. If the nearest
// member shows the record still at that revision (one serializable read),
// the promotion takes it for the key's state without reading the history:
// the ticket cannot have promoted while the record is still at its base.
// The run's transcript is written as a new file (temp, fsync, no-replace
// rename, directory fsync), then the record naming it is committed with
// its history entry in one etcd transaction guarded by that revision. A
// lost compare writes nothing: the file is removed, and the store begins
// again, reading the record and its history linearizably (the ticket is
// then superseded, or repeats its first promotion); so does a base the
// nearest member shows moved on, before any file is written. A refusal is
// appended to the history under the same guard, leaving the record, and so
// every job's base, as it was.
//
// With several endpoints a commit, or a refusal's append, unanswered
// after a third of the request timeout is sent again meanwhile (and at
// two thirds), to the next member: a member that takes connections and
// answers nothing would otherwise fail every commit sent to it. The
// tries are one write on one base: one lands at most, and the promotion
// is then as unsure as after a lost answer (an append that finds its own
// entry in place is that entry).
//
// A commit whose answer is lost (etcd unavailable, a leader killed under
// it) may have committed. It is retried on the same base until the request
// timeout: a conflict whose record names this promotion's own file, or
// whose history holds its entry (another job promoted on it before the
// answer came), is this promotion, committed by an earlier try, and
// promoted. So is such a conflict met by a commit none of whose tries
// went unanswered here: etcd's client sends a request again itself when
// its answer is a context error's (Canceled, DeadlineExceeded: a hop
// between worker and member) while the request has time left, and only
// the second send's answer comes back; a migration's create (told, once
// a promotion landed on it, by the key dir's newest history entry it
// carried) and a reap's delete take theirs so too. If the timeout ends
// first, the promote is promote-failed with the cause, the job's
// transcript stays in its job dir, and the file is left for reap
// (removing it could remove a generation that did commit); a retry with
// the same ticket repeats the promotion if it had landed.
//
// # Reap
//
// Reap removes keys whose last promotion (for one dated later after its
// file's mtime than a commit can be, a clock that is wrong, the mtime) is
// older than a TTL, by the reaper's clock or the file server's where that
// is behind (a reaper whose clock jumped ahead removes no key the fleet
// promoted since), each under a lease-backed etcd lock and with a delete
// guarded by the revision it judged, so a promotion landing meanwhile
// (even after the reaper's lease ran out under it) is never removed. It
// also removes files no record needs once their grace period has passed:
// orphans of promotions that lost or never committed, and generations
// superseded longer ago than the grace period.
//
// # Operating
//
// Inspect and Check are dump's and check's walks over a fleet. They report
// in package store's types (store.KeyReport, store.Finding) by the key
// dir's own rules (store.Judge, store.VerifyRecorded): Inspect lists every
// record, one snapshot, with the verdict a resolve would get and the file
// it names; Check examines the records and the transcripts dir, finds
// generations missing or not what their record says and orphans (files
// no record needs past the grace period, which Reap sweeps), and with
// Repair removes the orphans, each key's under its lock, judged again
// from a fresh read. Stats is stats' walk: Inspect's, every key's whole
// history read, summed into a store.Stats as a sessions root's is. The
// walks (Inspect, Check, Reap, Stats, ToEtcd, FromEtcd) that the end of
// their ctx stopped return ctx's error as it is: a
// deadline of the caller's is context.DeadlineExceeded, never
// etcdmeta.ErrUnavailable, which is etcd's own silence; a nil ctx is
// context.Background(), as package store's walks take it, and one whose
// Done is closed while its Err is nil (a caller's own type that breaks
// Go's contract) is cancelled (context.Canceled). Unreachable is
// the Backend a job builds when etcd ignores or refuses Open's login:
// resolves are store-unavailable when no member answered, a fault when
// the credentials were refused, and every promotion is promote-failed.
//
// # Migration
//
// ToEtcd moves a single-host sessions root into a fleet, FromEtcd moves a
// fleet back into a root; both report in package migrate's shape. ToEtcd
// takes each key dir under its meta.db's exclusive lock, a pending
// promotion rolled forward first (store.RollForward), writes the
// transcript the store serves once into the transcripts dir, and creates
// the record and the whole history in one etcd transaction that commits
// only if etcd holds nothing for the key (etcdmeta.Create). The key dir is
// left as it was: a read-only copy the workers stop using once they point
// at etcd, and the way back while the fleet has promoted nothing. A key
// dir in the legacy layout is refused (run sessdb migrate to meta.db
// first), and so is a damaged meta.db (sessdb check --repair). FromEtcd
// writes each key as the store promotes: the transcript to a temp (file
// and directory fsynced), one meta.db transaction with the record, the
// history and a pending entry naming the temp, then the rename and the
// directory fsync.
//
// Both are guarded. A destination holding the same generation (gen, size,
// CRC32C) is already, with the same stamps or one history: the same bytes
// under another venue, pi version, chain, context reading or promotion
// time, whose promotion neither side's history holds, are another root's
// key, a conflict naming the stamps. A key whose generation in etcd
// descends from the key dir's (a higher gen whose history holds the key
// dir's newest entry, or whose transcript begins with the key dir's
// bytes: the fleet promoted it since) is already to ToEtcd and brought
// forward by FromEtcd (back into
// the root the keys came from); anything else, a key dir promoted since
// etcd got it included (ToEtcd only creates records), is a conflict,
// reported and left alone. Each key is whole in its source until the
// destination has committed it, so a run killed at any point loses
// nothing and a re-run converges: ToEtcd finds the record it committed, or
// writes the transcript again (the killed run's copy is an orphan for
// Reap); FromEtcd finds the generation in place, rolls a pending entry
// forward, or starts again on an empty meta.db, whose stray temp it
// sweeps. A second run reports every key already and changes nothing, two
// runs at once move each key once (meta.db's lock, then etcd's guard), and
// a dry run writes nothing anywhere. The single-host workers must be
// stopped for ToEtcd (a promotion landing in a key dir after it was copied
// makes the key a conflict on a re-run), the fleet's for FromEtcd.
//
// # Caveat
//
// What package shared says of the shared filesystem holds here: an NFS
// export must be sync, and every worker writes as the same user. The
// grace period must exceed the skew between the hosts' clocks; files'
// ages are told by the file server's, which Reap and a repairing Check
// read by setting the transcripts dir's modification time. A Backend's
// etcd client is safe for concurrent use; so is a Backend.
package fleet
