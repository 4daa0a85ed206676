package store

import "errors"

// The store's sentinels, grouped by when they occur. Errors wrap them (and
// the *os.PathError of the call that failed, where there was one), so
// errors.Is tells them apart.

// Configuration.
var (
	// ErrSessionsDirUnset is returned by New when no sessions root is given:
	// the one fail-closed case of the whole feature.
	ErrSessionsDirUnset = errors.New("sessions-dir-unset")

	// ErrInvalidKey is returned when a key from outside does not have the form
	// of a key.
	ErrInvalidKey = errors.New("invalid key: want 32 lowercase hex characters")

	// ErrNoSessionsRoot is returned by the operator's walks and actions
	// (Inspect, Stats, Check, Reap, RollForward, Accept, Quarantine; a
	// DeepCheckDB is incomplete with it) on a store made by NewOn, which
	// has no sessions root: they work on the key-dir backend only, and a
	// fleet's are package fleet's. Nothing is read or written.
	ErrNoSessionsRoot = errors.New("no sessions root: the operator's walks work on a store made by New (a fleet's are package fleet's)")
)

// Resolve and Promote: the job's values.
var (
	// ErrValueTooLong is returned by Resolve when a job's PiVersion,
	// Venue, Model or ID, and by Promote when the request's PiVersion or
	// the ticket's Venue, Model or Job, is longer than MaxValueBytes.
	// Nothing is staged, written or removed.
	ErrValueTooLong = errors.New("longer than a job's value may be (MaxValueBytes)")

	// ErrValueNotUTF8 is returned by Resolve when a job's PiVersion,
	// Venue or ID, and by Promote when the request's PiVersion or the
	// ticket's Venue or Job, is not valid UTF-8 (a Model that is not is no
	// model, as the legacy check makes it, and never reaches the ticket;
	// see Job): the ticket is JSON, which carries such a value back as
	// another one (U+FFFD in place of each bad byte), so that a venue
	// stamped from it would match no job's (venue-changed for ever). The
	// CLI refuses such a flag (exit 2). Nothing is staged, written or
	// removed.
	ErrValueNotUTF8 = errors.New("not valid UTF-8 (a job's ticket and the key's history record it as text)")
)

// Resolve.
var (
	// ErrNoJobDir is returned by Resolve given an empty job dir, and by
	// Promote (with ErrBadTicket) of a Session with none: a caller's
	// arguments mixed up, not a fault of the disk's. An empty path is no
	// directory, and not the working directory: the run would be staged,
	// or looked for, where the job's container never sees it. Nothing is
	// made, read or written.
	ErrNoJobDir = errors.New("no job dir given")

	// ErrStagedNotFile is returned by Resolve when something other than a
	// regular file or a link sits at <job-dir>/session/current.jsonl (a
	// directory, a FIFO, a device, a socket): the store will not remove it, and
	// will not write through it.
	ErrStagedNotFile = errors.New("not a regular file or a link: refusing to replace it")

	// ErrJobDirInStore is returned by Resolve when the job dir is the
	// store's directory (the sessions root, a fleet's transcripts dir),
	// lies inside one of its keys, or holds it (see Resolve). Nothing is
	// made, written or removed.
	ErrJobDirInStore = errors.New("a job dir may not be the store's directory, lie inside one of its keys, or hold it")

	// ErrNoBackend is returned by Resolve, Promote and CheckRoot of a
	// Store that was not made by New or NewOn (a zero Store), or was made
	// by NewOn with a nil Backend or a nil pointer in one (a
	// *fleet.Backend that fleet.Open did not make): there is nowhere to
	// read or write a key. Nothing is made, written or removed. Package
	// fleet wraps it for every method of a Backend fleet.Open did not
	// make (a zero fleet.Backend, or the nil one Open returns with its
	// error), so that a store made on a zero one answers ErrNoBackend
	// too, once the arguments Resolve and Promote check first (the key,
	// the job's values, the job dir, the Session) pass: an argument they
	// refuse is said first, where a store made on none says ErrNoBackend
	// before it looks at them.
	ErrNoBackend = errors.New("the store has no backend: make it with New or NewOn")

	// ErrJobDirBusy is returned by Resolve and Promote when another
	// resolve or promote is staging in, or reading from, the same job dir
	// at that moment (its lock is held): a worker that gave up on a slow
	// resolve and used the dir again. Two resolves at once could leave
	// one's ticket beside the other's transcript, and its promote put one
	// conversation into another key. Nothing is made, written or removed;
	// retry once the other is done. Promote returns it too, with
	// PromoteRequest.TicketFromJobDir, when the job dir was resolved again
	// since its Session's ticket was read (its ticket names another id,
	// or is gone or no ticket where a file is staged: a resolve removes
	// it before it stages, and one killed before its own ticket leaves
	// its staged file and none): the staged file is that resolve's, and
	// no retry of this Session promotes it (the CLI's next promote reads
	// that resolve's ticket, or finds none).
	ErrJobDirBusy = errors.New("another resolve or promote is using the job dir: retry once it is done")

	// ErrRootNotUTF8 is returned by Resolve when the sessions root leads,
	// through its links or from a working directory, to a path that is not
	// valid UTF-8 (on a fleet, when its transcripts dir's name is not): the
	// ticket names the root as text, and no promote could find the root it
	// names. Nothing is made, written or removed.
	ErrRootNotUTF8 = errors.New("where the sessions root leads is not valid UTF-8 (a job's ticket names it as text)")
)

// Promote.
var (
	// ErrBadRequest is returned by Promote for a PromoteRequest no
	// caller means: a Require other than "" and transcript.Answered, a
	// negative Window or negative Tokens (a negative window would clear
	// the key's reading, negative tokens would be stored as one, and
	// either way the context bound would never refuse the conversation
	// again). Nothing is read or written.
	ErrBadRequest = errors.New("not a promote request the store takes")

	// ErrBadTicket is returned by ReadTicket when the ticket is not a file
	// Resolve could have written: not a small regular file, not a ticket's
	// JSON, or fields out of their range. Promote returns it for a Session
	// ReadTicket would refuse, for one with no JobDir (no resolve gives
	// one; with ErrNoJobDir), and, with PromoteRequest.TicketFromJobDir,
	// for one whose Key is not the key of the job dir's ticket it names.
	// Its message never quotes the file.
	ErrBadTicket = errors.New("not a valid ticket")

	// ErrWrongRoot is returned by Promote when the ticket was issued by a
	// store with another sessions root: nothing is written anywhere.
	ErrWrongRoot = errors.New("the ticket was issued for another sessions root")

	// ErrMetaFellBack is returned by Promote when meta.db's newest meta
	// page is damaged, bbolt would run on the older one, and that older
	// commit describes a transcript other than the one in place: the key
	// lost its last commit to the damage, and writing now would make the
	// loss permanent. sessdb check reports it; the operator decides.
	ErrMetaFellBack = errors.New("meta.db fell back to an older commit that does not describe the transcript in place")
)

// Backends.
var (
	// ErrConflict is returned by KeyTxn.Commit when another promotion
	// changed the key since State: nothing was committed, and Promote looks
	// again (the ticket may have promoted already, or been superseded).
	ErrConflict = errors.New("the key changed since it was read")

	// ErrKeyLocked is returned by Backend.Begin when the key's lock was not
	// had in time: the promotion is refused as locked.
	ErrKeyLocked = errors.New("the key's lock was not had in time")

	// ErrKeyDirNotADirectory is returned by Backend.Begin when the key's
	// name is a link or not a directory: the promotion is refused as
	// not-a-regular-file, and nothing is followed.
	ErrKeyDirNotADirectory = errors.New("the key dir is a link or not a directory")
)

// Reap and check's operator actions.
var (
	// ErrForeignEntry is a reap's cause (in ReapResult.Causes, its text
	// in Skipped) for a key dir or a reap-owned dir that holds an entry
	// the store never writes: a subdirectory, a FIFO, a device, a socket,
	// or any file at a name that is not the store's. Nothing of the key is
	// removed.
	ErrForeignEntry = errors.New("not the store's")

	// ErrNotAccepted is returned by Accept when there is nothing it may
	// record: no regular, non-empty current.jsonl, a meta.db it cannot
	// write (damaged, from a newer sessdb, fallen back to an older commit),
	// or a key with no meta.db that a repair did not move aside (a legacy
	// key, whose identity is its file). Nothing is written.
	ErrNotAccepted = errors.New("not accepted")

	// ErrReapedKeyExists is a reap's cause (in ReapResult.Causes), and
	// check --repair's, for a reap-owned dir a promotion landed in after
	// its reap was interrupted, when the key's name is taken again by
	// anything but an empty directory (which the restore replaces):
	// neither is moved, and the operator decides.
	ErrReapedKeyExists = errors.New("a promotion landed in it after its reap was interrupted, and the key exists again")

	// ErrDirNotMovable is a reap's cause (in ReapResult.Causes), and
	// Quarantine's error, when the file system refuses to rename the key dir
	// (EXDEV): overlayfs renames a directory of a lower layer (one a
	// container image holds) only when mounted with redirect_dir=on.
	// Nothing of the key is moved or removed; the sessions root belongs
	// on a volume, not in an image's layers.
	ErrDirNotMovable = errors.New("the file system will not rename this directory (overlayfs renames one from a lower layer, a container image's, only when mounted with redirect_dir=on): keep the sessions root on a volume")
)
