// Package etcdmeta keeps each key's record and audit history in etcd, for a
// fleet of workers that share one sessions store; it is the etcd side of
// the store's metadata seam, as package db is the single-host side.
//
// # Layout
//
// Everything lives under one prefix (Config.Prefix, default "/sessdb").
// Records and history are apart so that List reads one value per key and
// no history. TestLayout writes every kind of value and compares etcd's
// keys with this tree.
//
//	<prefix>/
//	  record/<key>                 the record: msgpack {v schema,
//	                                 t {g gen, s size, c crc32c, p promoted_at, f file},
//	                                 pv pi-version, vn venue, rc resume-chain,
//	                                 cx {t tokens, w window, m model},
//	                                 hg history_gen, hs newest history seq (a hint)}
//	  history/<key>/<seq>          an entry: msgpack {g gen, a at, r resumed, w reason,
//	                                 b bytes, c chain, j job, t torn_tail, k ticket,
//	                                 o outcome, n run, x rewritten, bg base_gen,
//	                                 s crc32c (a promotion's; absent: not recorded)};
//	                                 seq 16 hex digits; the newest 64 kept
//	  lock/<key>/<lease>           concurrency.Mutex: one key per holder or waiter,
//	                                 attached to its lease; the oldest holds the lock
//	  fleet                        the fleet's ID: 32 lowercase hex, random, made once
//	                                 by its first writer (FleetID); a transcripts dir's
//	                                 mark names it
//
// A key is 32 lowercase hex characters; any other is refused before it
// touches etcd. Values are map-encoded msgpack with short tags; absent
// sidecars are absent fields. Decoding skips fields it does not know (an
// older binary reads a newer record) and refuses a record whose schema
// version is newer than SchemaVersion (ErrNewerSchema), nil, arrays,
// trailing bytes, a length field that declares more than the value holds
// and nesting deeper than msgpackmap.MaxDepth (ErrDamaged), before the
// decoder allocates anything for them.
//
// # Guarantees
//
// Get reads the record, its mod revision and the history in one
// linearizable read, all at one revision; GetRecord reads the record and
// its revision alone, as a resolve needs. Put, AppendHistory and Delete
// are each one etcd transaction guarded by the record's mod revision (the
// base; 0 means "no record"): all of it commits or none of it does, etcd
// has made it durable on a quorum before it returns, and a lost compare
// writes nothing and returns a *ConflictError carrying the key's state,
// read in the same transaction. The mod revision is the base a job's
// ticket carries, so "superseded" comes from etcd's compare, not from a
// lock. AppendHistory does not touch the record, so recording a refusal
// supersedes no one. A history slot is claimed by the transaction too,
// right above the newest entry the key holds: writers racing for one slot
// each get their own. The record names the newest slot as of its write, a
// hint that spares a new process reading the history before it writes; a
// stale hint costs a retry, never an entry out of place. Create, which brings a
// key in whole (its record and its history, as a single host kept them),
// is one transaction too, guarded by the key having no record and no
// history entry. RenumberHistory, which settles a history whose newest
// entry is in the last slot an entry takes, is one transaction guarded by
// the record's mod revision and by the history as it read it; it does not
// write the record, so it supersedes no one.
//
// Every request waits at most Config.RequestTimeout, and no longer than
// its ctx (a nil one is context.Background(), as the fleet's walks take
// it, and one that breaks Go's contract is held to it, callerctx.Of);
// with several endpoints a read unanswered after a third of it is sent
// again, to the next member, so one silent member does not cost a
// read the whole timeout (nor a lock: its lease's grant, its mutex's
// first request, its wait's reads and its release are sent again so
// too, see Lock); an etcd that does not answer is ErrUnavailable, a refusal of the
// credentials (password, permission, TLS) is ErrAuth, and a write larger
// than etcd takes in one request is ErrTooLarge, never ErrUnavailable: it fails the same way
// however often it is retried. A write that returns ErrUnavailable may have
// committed: retried on the same base, it conflicts with itself (its own
// record, which names its own transcript file) or commits; it never
// commits twice. etcd's client itself sends a write again when its answer
// is a context error's (Canceled, DeadlineExceeded: a hop between client
// and member) while the caller's context lives, and the caller sees only
// the last answer: a conflict may then be with the write itself, landed,
// whatever the caller sent once, and says so (ConflictError.Resent).
//
// Lock is a lease-backed concurrency.Mutex: it ends when its holder
// unlocks, dies or loses etcd for Config.LockTTL, with no stale-lock clock.
// A Store is safe for concurrent use by multiple goroutines.
//
// # Caveat
//
// A guarded write cannot check the schema version of the record it
// replaces: a binary must not write a key whose Get returned
// ErrNewerSchema. A lease outlives a dead holder by up to its TTL, and by
// an election timeout more when the leader changes meanwhile (etcd renews
// every lease on a new leader). A lock can end under a holder that is
// merely slow; holders watch the lost channel, and every write is guarded
// anyway. Logging in with a password costs a bcrypt on the server per
// Open; a short-lived process per job is cheaper with client-certificate
// authentication (Config with CertFile and no Username).
package etcdmeta
