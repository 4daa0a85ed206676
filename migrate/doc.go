// Package migrate moves key dirs of a sessions root from the legacy
// file-per-sidecar layout (pi-version, venue, resume-chain, context, lock
// and .incoming temps beside current.jsonl) to meta.db, and back.
//
// ToDB, per key dir: under meta.db's exclusive lock, read every legacy
// sidecar with package store/legacy's rules (the legacy reader's, quirks
// included), record current.jsonl's identity (size, CRC32C) with its mtime
// as the last promotion time, commit one transaction, and only then remove
// the legacy sidecars, a stale lock and the legacy temps, and fsync the
// directory. Every odd value keeps its meaning to the ladder: an absent
// venue stays absent ("local"); a venue that reads as no value (empty, a
// link, a FIFO, over 4096 bytes) becomes the "(pending)" stamp, which
// matches no venue, as the legacy reader matched none; an unknown pi-version
// becomes "", which the version gate refuses; a chain or context is what
// the legacy parsers make of it. ToLegacy writes the legacy files back from
// meta.db (temp, fsync, read back, rename), sets current.jsonl's mtime to
// the recorded promotion time, fsyncs, and only then removes meta.db.
//
// Each direction takes a key in two steps. It plans under the lock it
// needs (meta.db's exclusive lock, created with the file if need be; for a
// dry run a shared lock, or none where there is no meta.db to lock): what
// the legacy files and meta.db hold, their oddities, the transcript's
// identity, the files to write and to remove. Then, under the same lock,
// it applies the plan. A dry run is the plan alone, reported as the run
// would report it.
//
// What is promised: a key judged before ToDB, after it, and after ToLegacy
// gets the same verdict from store.Resolve; at every instant each value is
// held by the legacy files or by a committed meta.db, so a run killed at
// any point loses nothing, and a re-run converges on the same tree (a key
// killed between commit and removal is only cleaned up); a second run
// finds nothing to do; two runs at once convert each key once (meta.db's
// lock); a dry run changes nothing, not a byte and not an mtime. A key
// dir with a legacy lock younger than an hour is left untouched and
// reported locked. Links are never followed and FIFOs never block.
//
// A meta.db with any record is authoritative, as it is to the store, and
// legacy files beside it are leftovers. One with no record at all is a
// migration (or a promotion) that died before its commit: the legacy
// files are the values; ToDB writes them into it, ToLegacy removes it.
//
// Caveat: the legacy workers must be stopped first (and the new ones, for
// ToLegacy). The legacy store locked nothing a reader could see except its
// lock file, which is checked when a key is opened and again under
// meta.db's lock; a legacy promotion that starts after that check can
// still race the migration of its key. A migration killed before its
// commit leaves an empty meta.db, which vouches for nothing: the store
// still judges the key by its legacy files (all its values are still
// there) until the re-run migrates it. ToLegacy lets go of meta.db's lock
// while the store rolls a pending promotion forward (the store takes the
// lock itself), and judges the key again once it has it back. The audit
// history has no legacy form; ToLegacy drops it. One verdict keeps its
// resume but not its reason: a transcript that does not match its record
// in meta.db (transcript-replaced) has no record to fail in the legacy
// layout, so ToLegacy stamps its venue "(pending)" and it stays cold as
// venue-changed.
package migrate
