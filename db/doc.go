// Package db keeps one key directory's sidecars and audit history in a bbolt
// file named meta.db, and makes that file safe to open from many processes
// and goroutines at once, and safe to open when it is damaged.
//
// # Schema
//
// Schema version 2. Bucket and key names mirror the legacy sidecar file names.
// Every value is msgpack; records are maps with the short tags shown (tag
// then field), integers are 64-bit. TestSchemaTree parses this tree and
// compares it with a file in which every key has been written, so the drawing
// and the code cannot drift apart.
//
//	meta/
//	  schema        uint: the schema version of this file
//	  created       int: when the file was made, unix nanoseconds, host clock
//	sidecars/
//	  transcript    {g gen, s size, c crc32c, p promoted_at}: identity of current.jsonl
//	  pi-version    string: "" = unknown
//	  venue         string: absent = "local"
//	  resume-chain  uint: consecutive host deliveries
//	  context       {t tokens, w window, m model}: absent = no measurement
//	  pending       {t tmp, s size, c crc32c, g gen, v prev}: a promotion committed, not yet renamed; prev is the transcript it replaces
//	history/
//	  <seq>         {g gen, a at, r resumed, w reason, b bytes, c chain, j job, t torn_tail, o outcome, k ticket, u run, x rewritten, bg base_gen, s crc32c}: key big-endian u64; the last 64 kept
//
// Schema 2 is the job contract. history/ records refused promotions as
// well as promotions, in the order they happened: its keys are sequence
// numbers, and g is the generation promoted (for a refusal, the key's
// generation when it refused: the one that superseded the ticket). o is
// "" for a promotion, else the refusal ("superseded",
// "transcript-rewritten", "run-incomplete"); k the job's ticket id, by which
// FindTicket finds a retried ticket's promotion; u the run's shape
// ("answered", "errored", "unanswered", "unchanged", "unknown": a run
// sessdb could not read; "" not recorded, from before shapes were); x a
// promotion let through over a rewritten prefix; bg the generation the
// ticket was resolved from (0 cold). pending's v (prev) is the identity of
// the transcript the promotion replaces, absent when there was none: a
// reader whose pending temporary file is gone can still judge current.jsonl
// by it.
//
// A schema 1 file is read as it is and needs no rewriting: a schema 1
// history key is the gen, which is a sequence already and which stands for
// the absent g; every other new field is absent and reads as its zero value,
// the default above. The first write (an Update, not a writer's open) bumps
// meta/schema to 2, in its own transaction, after which a binary that
// knows only schema 1 refuses the file: a writer that only holds the lock
// (a sweep of temps, a migration with nothing to do) leaves it readable to
// the sessdb that wrote it.
//
// Decoding skips fields it does not know, so that a record can gain a field
// without a new schema version, and rejects trailing bytes, values of the
// wrong msgpack type, and lengths or nesting msgpackmap.WellFormed refuses.
//
// # Guarantees
//
// Update runs one bbolt read-write transaction: all of it commits or none of
// it does, and a commit returns only after bbolt has fsynced it. A new meta.db
// appears complete or not at all (it is built under a temporary name and
// linked into place, never over an existing file). OpenReader never writes:
// not a byte, not an mtime, not a new file.
//
// A file that cannot be trusted is reported as ErrDamaged instead of
// crashing the process: a 0-byte file, a link or other non-regular file, both
// meta pages invalid, a file shorter than its high-water mark (which bbolt
// would answer with SIGBUS), a page tree with a cycle or an offset out of
// bounds (which would make bbolt loop until it runs out of memory, or
// fault), a page claiming more than bbolt writes (a value over
// MaxRecordBytes, a key over bbolt's MaxKeySize, a node of more than four
// elements past a page: in a sparse file, gigabytes a writer's bbolt would
// copy), a record that does not decode, a missing bucket, or a page that
// still makes bbolt panic or fault. A Put or AppendHistory of a record
// over MaxRecordBytes is refused (ErrRecordTooLarge). The file is checked
// under its lock before anything reads it. A reader then decodes its
// records from the checked pages itself, read once into memory, keys in
// order or ErrDamaged; writers, and readers of a file whose pages pass
// 1 MiB, go through bbolt,
// and every read of its mapping (the bucket lookups and the open's own
// schema check included) runs under recover with faults turned into
// panics: a file cut short under a reader by another process is ErrDamaged,
// not SIGBUS. A writer first reads the whole file the way a reader does
// (every bucket and record, from its checked pages when they fit in 1 MiB,
// through bbolt otherwise) and checks that the freelist lists no page in
// use: it refuses every file a reader refuses, and never commits into one.
// PutTranscript refuses a generation lower than the file records. A file
// whose schema is newer than SchemaVersion is refused with ErrNewerSchema
// and never written. Files are created with 1 KiB pages (PageSize); a file
// with other pages is read and written as it is. A writer's open asks
// Options.BeforeWrite, when set, before it makes a missing meta.db, and
// the first write of an older schema's file asks it before it commits the
// schema migration: a caller whose key directory is
// moved aside while the open waits for a lock makes or changes nothing in
// it.
//
// Opens wait at most Options.LockTimeout in total for two locks: a
// process-wide reader/writer lock per key directory, and flock on meta.db
// (shared for readers, exclusive for writers), taken through a turnstile,
// the key directory's own flock, held only until meta.db's is had, so that
// readers in other processes cannot keep a waiting writer out (where the
// directory cannot be flocked, meta.db's flock is taken without it;
// Options.NoTurnstile skips it for a reader whose lock another process
// holds on its behalf; a writer with Options.HoldTurnstile keeps it until
// Close, and AwaitTurnstile waits for such a writer). OpenReaderContext,
// OpenWriterContext and OpenSidecarsContext end that wait early once their
// context is done, with an error that wraps the context's, not
// ErrLockTimeout: a caller that gave up is not one that found the key
// locked. A DB is safe for
// concurrent use by multiple goroutines; a Tx is not, and is valid only
// inside the function it was passed to.
//
// # Caveat
//
// flock is advisory and local: it is not a lock on a network filesystem, and
// neither bbolt nor this package is safe there. The kernel releases flock
// when the process dies, so a crashed holder never leaves a stale lock, but a
// process that merely hangs holds its key until it exits. The pre-check
// knows bbolt 1.5's file format (version 2); a file of another format
// version is refused as damaged. After bbolt has panicked on a damaged page,
// the handle only closes, without bbolt's help: its lock is released and
// the file unmapped, where /proc/self/maps tells the mapping's length
// (Linux); elsewhere it stays mapped until the process exits. A process
// that ignores the lock and writes the file under a reader (a cp of a
// backup over the live file) moves the file's size or modification time
// on, and a reader refuses what it read meanwhile (ErrDamaged): bbolt
// pages carry no checksum, and only that tells a torn page from the
// file's. Where a write falls within one tick of the file system's clock
// after the write before it, and leaves the size as it was, neither
// moves, and the read may return what was written without an error.
// bbolt commits in place, so OpenWriter first gives a meta.db with more than one name (a hard link:
// a copy of the root made with cp -al or rsync --link-dest) a file of its
// own, a copy renamed over it under its lock, with its owner, group,
// permission bits and holes (a writer that may not give the copy that owner and
// group, neither root nor the owner, or the owner outside the file's
// group, fails with EPERM and changes nothing): a commit never changes
// the file at its other names. Only an open that writes copies; a reader
// leaves the names as they are, and so does a writer's open that refuses
// the file (damage, a newer schema), but for a record or a schema
// refused in a file whose pages pass 1 MiB: that is read through bbolt,
// on the copy.
package db
