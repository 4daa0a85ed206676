package legacy

import (
	"errors"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"sessdb/gates"
	"sessdb/internal/faults"
	"sessdb/internal/fsat"
)

// Names of the legacy files in a key directory, and the limits their reader
// applied.
const (
	TranscriptName  = "current.jsonl" // the transcript, pi's JSONL
	PiVersionName   = "pi-version"    // the pi version that wrote the transcript
	VenueName       = "venue"         // the backend the transcript ran on
	ResumeChainName = "resume-chain"  // consecutive host deliveries
	ContextName     = "context"       // "tokens window [model]": the last context reading
	LockName        = "lock"          // the legacy promotion lock: an empty file, stale after LockStale
	// SidecarMaxBytes is the legacy SIDECAR_MAX_BYTES: a sidecar larger
	// than this (or empty) has no value, so a huge file costs no read time.
	SidecarMaxBytes = 4096
	// PendingVenue is the stamp a legacy promotion wrote before its swap.
	// Parentheses are outside every backend-name charset, so it matches no
	// venue and a key left holding it stays cold until a promotion lands.
	PendingVenue = "(pending)"
)

// ReadSidecar reads the sidecar name in dir as the legacy readSidecar did:
// a regular file of 1..SidecarMaxBytes bytes, decoded as UTF-8 and trimmed
// of JavaScript whitespace. ok is false for "no value": missing, a symbolic
// link (dangling or not: it is never followed), a directory, FIFO, socket
// or device, empty, oversized, or unreadable. A file holding only whitespace
// has the value "", as it did in the legacy store.
//
// dir must be a directory opened by the caller (O_DIRECTORY|O_NOFOLLOW);
// name must be a single path component. The file is opened relative to dir
// with O_NOFOLLOW|O_NONBLOCK and judged on fstat of what was opened, so a
// FIFO cannot block the read and nothing is decided by a name that could
// change between a check and a use. Safe for concurrent use; it never
// panics and never writes.
func ReadSidecar(dir *os.File, name string) (value string, ok bool) {
	value, ok, _ = readSidecar(dir, name)
	return value, ok
}

// ReadVenue reads the venue stamp. Absent only when there is no entry by
// that name (ENOENT), which the ladder reads as "local": every transcript
// from before the stamp ran there. Any other failure, a link, or a file
// with no value is StampUnreadable, which matches no venue.
func ReadVenue(dir *os.File) gates.Stamp { return readStamp(dir, VenueName) }

// ReadPiVersion reads the pi-version stamp. The legacy writer stamped an
// empty file for an unknown pi, which reads as StampUnreadable here; absent,
// unreadable and a whitespace-only value (present, "") all make the version
// gate refuse, so the distinction is kept only for dump and migration.
func ReadPiVersion(dir *os.File) gates.Stamp { return readStamp(dir, PiVersionName) }

// ReadResumeChain reads the consecutive-delivery counter; anything that is
// not a valid positive counter is 0 (see ParseResumeChain).
func ReadResumeChain(dir *os.File) uint64 {
	n, _, _ := readResumeChain(dir)
	return n
}

// ReadContext reads the context reading; nil means no measurement (see
// ParseContext), which the context gate passes.
func ReadContext(dir *os.File) *gates.Context {
	c, _, _ := readContext(dir)
	return c
}

// readResumeChain is ReadResumeChain that also returns whether the
// sidecar gave a value, and why not when it did not (readSidecar's
// error: ENOENT when there is no file).
func readResumeChain(dir *os.File) (uint64, bool, error) {
	v, ok, err := readSidecar(dir, ResumeChainName)
	if !ok {
		return 0, false, err
	}
	return ParseResumeChain(v), true, nil
}

// readContext is ReadContext that also returns whether the sidecar gave
// a value (one ParseContext may still read as no measurement), and why
// not when it did not (readSidecar's error: ENOENT when there is no file).
func readContext(dir *os.File) (*gates.Context, bool, error) {
	v, ok, err := readSidecar(dir, ContextName)
	if !ok {
		return nil, false, err
	}
	c, ok := ParseContext(v)
	if !ok {
		return nil, true, nil
	}
	return &c, true, nil
}

// Observed is what a key dir's four sidecars read as.
type Observed struct {
	Venue       gates.Stamp    // as ReadVenue reads it (absent: the ladder's "local")
	PiVersion   gates.Stamp    // as ReadPiVersion reads it
	ResumeChain uint64         // as ReadResumeChain reads it: unreadable is 0
	Context     *gates.Context // as ReadContext reads it: nil is no measurement
	// NotRead are the sidecar reads that failed on a file that is there
	// (an I/O error, a permission refused: see Stamp.NotRead), each
	// naming its file, in reading order; nil when every sidecar was read
	// or is absent or has no value by its shape. Their values read as the
	// legacy reader read them all the same.
	NotRead []error
	// Unreadable names the sidecars that are there but gave no value (a
	// read that failed, a link, not a regular file, empty, oversized), in
	// reading order: a venue or pi-version so is StampUnreadable, a
	// resume chain 0 and a context no measurement, as an absent file
	// reads too; dump tells the two apart by it.
	Unreadable []string
	// VenueNotRead and PiVersionNotRead are the read's error of a stamp
	// whose Stamp.NotRead is set (it names the file), nil otherwise: the
	// store's log says why such a stamp decided a cold start.
	VenueNotRead, PiVersionNotRead error
}

// Observe reads the four sidecars as ReadVenue, ReadPiVersion,
// ReadResumeChain and ReadContext do, but for a read that failed for want
// of the reading process's own resources: no descriptor left (EMFILE,
// ENFILE) or no memory (ENOMEM, ENOBUFS). That is an error, not "no
// value": it says nothing about the file, and read as no value it would
// judge a key by a stamp the key does not have (a venue that says local
// read as unreadable is a venue-changed cold start, which the job's
// promotion then makes the key's conversation). A retry once the process
// has them reads the file. Any other read that failed is read as the
// legacy reader read it, and named in NotRead and in its stamp.
func Observe(dir *os.File) (Observed, error) {
	var o Observed
	note := func(err error) error {
		if starved := starvedOnly(err); starved != nil {
			return starved
		}
		if notRead(err) {
			o.NotRead = append(o.NotRead, err)
		}
		return nil
	}
	// A sidecar is unreadable when it gave no value and its open did
	// not fail for want of an entry (a stamp's StampUnreadable).
	unreadable := func(name string, ok bool, err error) {
		if !ok && !errors.Is(err, unix.ENOENT) {
			o.Unreadable = append(o.Unreadable, name)
		}
	}
	stamp := func(name string, st gates.Stamp, err error, notRead *error) {
		if st.State == gates.StampUnreadable {
			o.Unreadable = append(o.Unreadable, name)
		}
		if st.NotRead {
			*notRead = err
		}
	}
	var err error
	o.Venue, err = readStampErr(dir, VenueName)
	stamp(VenueName, o.Venue, err, &o.VenueNotRead)
	if err = note(err); err != nil {
		return Observed{}, err
	}
	o.PiVersion, err = readStampErr(dir, PiVersionName)
	stamp(PiVersionName, o.PiVersion, err, &o.PiVersionNotRead)
	if err = note(err); err != nil {
		return Observed{}, err
	}
	var ok bool
	o.ResumeChain, ok, err = readResumeChain(dir)
	unreadable(ResumeChainName, ok, err)
	if err = note(err); err != nil {
		return Observed{}, err
	}
	o.Context, ok, err = readContext(dir)
	unreadable(ContextName, ok, err)
	if err = note(err); err != nil {
		return Observed{}, err
	}
	return o, nil
}

// ObserveVenue is ReadVenue for the venue re-check after a copy, where
// any read that failed on the file (Observe's starved read, or one that
// NotRead names) is an error: the stamp was read at the gate, and a read
// failing now says nothing of a promotion landing in between.
func ObserveVenue(dir *os.File) (gates.Stamp, error) {
	st, err := readStampErr(dir, VenueName)
	if starvedOnly(err) != nil || notRead(err) {
		return st, err
	}
	return st, nil
}

// ObserveResumeChain is ReadResumeChain with Observe's error, for a caller
// that needs the chain alone (a first promotion beside legacy files).
func ObserveResumeChain(dir *os.File) (uint64, error) {
	n, _, err := readResumeChain(dir)
	return n, starvedOnly(err)
}

// starvedOnly is err when it is a failure of the reading process rather
// than of the file read (see Observe), else nil: the legacy reader turned
// every failure into "no value", and only these say nothing of the file.
func starvedOnly(err error) error {
	if errors.Is(err, unix.EMFILE) || errors.Is(err, unix.ENFILE) || errors.Is(err, unix.ENOMEM) || errors.Is(err, unix.ENOBUFS) {
		return err
	}
	return nil
}

// readStamp tells absence from unreadability by the open's own error.
// ENOENT from openat with O_NOFOLLOW on a single component means exactly
// what the legacy lstat's ENOENT meant (no entry: a dangling link is ELOOP
// here, present there); every other error is one the legacy reader also
// turned into "no value", after its lstat or at its read.
func readStamp(dir *os.File, name string) gates.Stamp {
	st, _ := readStampErr(dir, name)
	return st
}

// readStampErr is readStamp that also returns why the stamp has no value,
// when it has none (readSidecar's error; nil for an absent one).
func readStampErr(dir *os.File, name string) (gates.Stamp, error) {
	v, ok, err := readSidecar(dir, name)
	switch {
	case ok:
		return gates.Stamp{State: gates.StampPresent, Value: v}, nil
	case errors.Is(err, unix.ENOENT):
		return gates.Stamp{State: gates.StampAbsent}, nil
	}
	return gates.Stamp{State: gates.StampUnreadable, NotRead: notRead(err)}, err
}

// notRead reports whether err, a sidecar's read failing, failed on a file
// that is there (an I/O error, a permission refused), as opposed to no
// entry at the name (ENOENT), a file with no value by its shape (a link,
// not a regular file, oversized; a name that is not one), or the reading
// process's own starvation (starvedOnly). The legacy reader read all of
// them as "no value", and so do these readers; only the store's use of
// such a value differs (Stamp.NotRead).
func notRead(err error) bool {
	switch {
	case err == nil, errors.Is(err, unix.ENOENT), errors.Is(err, fsat.ErrNotRegular),
		errors.Is(err, fsat.ErrTooLarge), errors.Is(err, errName), starvedOnly(err) != nil:
		return false
	}
	return true
}

// readSidecar is ReadSidecar that also returns why name could not be read:
// the open's error (ENOENT: no entry), or why the file held no value.
func readSidecar(dir *os.File, name string) (string, bool, error) {
	if dir == nil || name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
		return "", false, errName
	}
	if err := faults.At(faults.LegacySidecarRead); err != nil {
		return "", false, &os.PathError{Op: "read", Path: fsat.Join(dir, name), Err: err}
	}
	// A file that grew past the cap after its fstat is refused as
	// oversized rather than read without bound (fsat caps the read).
	b, err := fsat.ReadSmallFile(dir, name, SidecarMaxBytes)
	if err != nil {
		return "", false, err
	}
	v, ok := SidecarValue(b)
	return v, ok, nil
}

// SidecarValue is what ReadSidecar reads from a regular file holding b:
// no value when b is empty or over SidecarMaxBytes, else b decoded as
// UTF-8 and trimmed of JavaScript whitespace. A writer of legacy files
// can so tell, before it writes, whether a value will read back as
// itself. Pure; never panics.
func SidecarValue(b []byte) (value string, ok bool) {
	if len(b) == 0 || len(b) > SidecarMaxBytes {
		return "", false
	}
	return jsTrim(decodeUTF8(b)), true
}
