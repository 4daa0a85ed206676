// Package legacy reads the sidecar files of the legacy file-per-sidecar
// store (edgehero/pi-dispatch, worker/src/session-store.mjs): pi-version,
// venue, resume-chain and context beside current.jsonl in a key directory.
//
// The promise: every value means what it meant to the legacy reader, quirks
// included, so a key judged by the legacy worker, by the store's fallback
// for a key dir without meta.db, and after migration gets the same verdict.
// A sidecar is a regular file of 1..4096 bytes, decoded as Node decodes
// UTF-8 and trimmed as JavaScript's trim does; anything else has no value.
// An absent venue means "local" but an unreadable one matches no venue; an
// absent, unreadable or empty pi-version is unknown; a counter that does not
// round-trip as a positive JS integer is 0 ("007" is 0, " 3 " is 3 because it
// is trimmed first); a context that is not "tokens window [model]" is no
// measurement, and its model stamp is compared as written.
//
// The readers work relative to a directory descriptor the caller opened
// with O_DIRECTORY|O_NOFOLLOW, on single path components, opening with
// O_NOFOLLOW|O_NONBLOCK and deciding on fstat: they never follow a link,
// never block on a FIFO, never write, never panic, and return no errors
// (a read-path miss is a cold start with a reason, not a fault), but for
// Observe's, ObserveVenue's and ObserveResumeChain's: a read that failed
// for want of the process's own descriptors or memory, which says nothing
// about the file. A read that failed on a file that is there (an I/O
// error) still has no value, as the legacy reader had it, but is told
// apart: Observe names it (Observed.NotRead, gates.Stamp.NotRead), so
// the store can refuse to let a cold start it decides replace the key's
// conversation, and ObserveVenue, the re-check after a copy, returns it.
//
// Caveat: each sidecar is read at its own instant, and nothing here locks.
// The legacy layout has no way to read the set as one consistent view; the
// caller must re-check what matters after it copies the transcript, as the
// legacy store re-checked the venue. Two departures from the legacy reader
// are deliberate and can only be reached by hand-made files: a sidecar that
// grows past 4096 bytes between the fstat and the read has no value (Node
// read it whole), and context numbers beyond int64 saturate.
package legacy
