package gates

import (
	"math/bits"
	"strings"
	"time"
)

// Bounds are the operator's limits. The zero value of every field switches
// its rung off, and so does a negative value (configuration rejects those
// before they get here; gates does not guess what one would mean). Defaults
// (8 MiB, 14 days) are the configuration's job, not this package's.
type Bounds struct {
	MaxBytes       int64         // rung 4; 0 = no cap
	TTL            time.Duration // rung 5; 0 = off
	MaxAge         time.Duration // rung 11; 0 = off
	MaxResumeChain uint64        // rung 8; 0 = off
	MaxContextPct  int           // rung 9; 0 = off, else 1..100
}

// StampState says what reading a stamp found.
type StampState uint8

const (
	StampAbsent     StampState = iota // no stamp at all
	StampPresent                      // a value was read (it may be "")
	StampUnreadable                   // something is there but yields no value
)

// String returns "absent", "present" or "unreadable".
func (s StampState) String() string {
	switch s {
	case StampAbsent:
		return "absent"
	case StampPresent:
		return "present"
	case StampUnreadable:
		return "unreadable"
	}
	return "invalid"
}

// A Stamp is a sidecar string whose absence and unreadability mean different
// things (venue: absent is "local", unreadable matches nothing). Value is
// meaningful only when State is StampPresent.
type Stamp struct {
	State StampState // what reading the stamp found
	Value string     // the stamp as read; "" unless State is StampPresent
	// NotRead, with StampUnreadable: the stamp's file is there but its
	// read failed (an I/O error, a permission refused). The ladder reads
	// it as unreadable, as the legacy reader did; the store gives a cold
	// start it decides no base, since the key could not be read.
	NotRead bool
}

// UnstampedVenue is what an absent venue stamp means: every transcript
// written before venues were recorded ran on the legacy store's "local"
// backend. It is a fixed word, never the deployment's current default,
// which can move under an old transcript.
const UnstampedVenue = "local"

// A Context is the container's last report of how full its context window
// was, stamped with the model that produced it.
type Context struct {
	Tokens, Window int64  // the reading: Tokens of a Window; a Window <= 0 is no measurement
	Model          string // as written; "" = unstamped
}

// A Job is what the resolving job brings to the comparison.
type Job struct {
	PiVersion string // the image's declared pi version; "" = declares none
	Venue     string // the venue the job will run in; "" = unresolvable
	Model     string // normalised provider/id; "" = unknown
}

// A Transcript is the lstat facts of current.jsonl, taken without following
// a link.
type Transcript struct {
	Exists  bool      // something is there under the name, a link included
	Regular bool      // false also when the key dir is not a real directory
	Size    int64     // bytes; 0 reads as absent
	ModTime time.Time // the legacy clock of rung 5 when no promotion is recorded
}

// A Header is what the transcript's first line said.
type Header struct {
	IsSession   bool      // the line is JSON with type "session"
	Timestamp   time.Time // the header's creation instant
	TimestampOK bool      // false: missing, not a string, or not parseable
}

// An Observation is everything the ladder judges, gathered by the caller
// from one key dir. Its zero value resolves as absent.
type Observation struct {
	Transcript Transcript // the lstat facts of current.jsonl
	// MetaUnreadable is true when meta.db exists but cannot be opened or is
	// damaged; nothing but rungs 1-4 is then judged.
	MetaUnreadable bool
	// MetaMovedAside: the key has no meta.db (or an empty one, a lock's),
	// but a repair moved a damaged one aside. Its legacy files, if any,
	// are older than what the db said, and no stamp can be trusted until
	// the next promotion.
	MetaMovedAside bool
	// LastPromotion is when the last completed promotion landed (host
	// clock); zero means no record, and expired falls back to
	// Transcript.ModTime, the legacy clock.
	LastPromotion time.Time
	Venue         Stamp    // absent means UnstampedVenue
	PiVersion     Stamp    // the pi version the transcript was last written by
	ResumeChain   uint64   // consecutive host deliveries; unreadable = 0
	Context       *Context // nil = no measurement
	Header        Header   // what the first line said
}

// A Verdict is Evaluate's answer. Reason is Resumed exactly when Resume is
// true.
type Verdict struct {
	Resume bool   // the transcript may be handed to the job
	Reason Reason // Resumed, or the first rung that missed
}

func cold(r Reason) Verdict { return Verdict{Resume: false, Reason: r} }

// Evaluate walks the ladder for one observation and returns the first miss,
// or Resumed. It is pure: the same arguments always give the same verdict,
// and it is safe to call from any number of goroutines. now is the host's
// clock at the resolve.
func Evaluate(obs Observation, b Bounds, job Job, now time.Time) Verdict {
	t := obs.Transcript
	// Rungs 1-4 are cheap lstat facts, and nothing a venue move or a new pi
	// could cause, so they name themselves before anything about lineage.
	if !t.Exists {
		return cold(Absent)
	}
	if !t.Regular {
		return cold(NotARegularFile) // a link is refused, never followed
	}
	// A negative size cannot come from a real lstat; reading it as empty is
	// the direction that stages nothing.
	if t.Size <= 0 {
		return cold(Absent)
	}
	if b.MaxBytes > 0 && t.Size > b.MaxBytes {
		return cold(TooLarge)
	}
	// Rung 4a: nothing after this can be judged without the db, and a damaged
	// db must never read as "no stamps", which would resume as local.
	if obs.MetaUnreadable {
		return cold(MetaUnreadable)
	}
	// Rung 4b: the same, after an operator's repair moved the db aside; the
	// key would otherwise read as unstamped and be told pi-version-changed.
	if obs.MetaMovedAside {
		return cold(MetaMovedAside)
	}
	// Rung 5 measures time since the last completed run, not conversation
	// age (rung 11 does that); strict > as the legacy store compared.
	if b.TTL > 0 {
		last := obs.LastPromotion
		if last.IsZero() {
			last = t.ModTime
		}
		if now.Sub(last) > b.TTL {
			return cold(Expired)
		}
	}
	// Rung 6 sits after every rung a venue move cannot cause and before the
	// pi-version rung, which a venue move can cause (another venue can report
	// another pi, or none): the first miss should name the real cause.
	if !venueMatches(obs.Venue, job.Venue) {
		return cold(VenueChanged)
	}
	// Rung 7: a transcript outlives the pi that wrote it, and stored tool
	// calls may not match a newer tool schema. Unknown on either side never
	// resumes; "assume it matches" is how resume went silently wrong before.
	if job.PiVersion == "" || obs.PiVersion.State != StampPresent || obs.PiVersion.Value != job.PiVersion {
		return cold(PiVersionChanged)
	}
	// Rung 8 asks about the lineage, not the file, so it refuses before the
	// header is read. The cost, accepted by the legacy authors: a transcript
	// both chain-exhausted and corrupt reports the chain first.
	if b.MaxResumeChain > 0 && obs.ResumeChain >= b.MaxResumeChain {
		return cold(ResumeChainTooLong)
	}
	if b.MaxContextPct > 0 && contextTooFull(obs.Context, job.Model, b.MaxContextPct) {
		return cold(ContextTooFull)
	}
	// Rung 10 stays ahead of rung 11 so a damaged file is reported as
	// damaged, not as a conversation that aged out.
	if !obs.Header.IsSession {
		return cold(Unparseable)
	}
	// Rung 11: a timestamp nobody can read cannot be shown young enough. A
	// future one passes: the agent owns the file and could as well write
	// "now", so refusing would only turn clock skew into cold starts.
	if b.MaxAge > 0 {
		h := obs.Header
		if !h.TimestampOK || now.Sub(h.Timestamp) > b.MaxAge {
			return cold(ConversationTooOld)
		}
	}
	return Verdict{Resume: true, Reason: Resumed}
}

// venueMatches reports whether the stamp vouches for jobVenue. An absent
// stamp means UnstampedVenue; an unreadable one, or a job whose venue could
// not be resolved, vouches for nothing. A "(pending)" stamp left by an
// interrupted legacy promotion (or written on purpose to keep a key cold)
// falls out of the exact compare, since no venue name can contain
// parentheses: a job venue that does is no venue, and vouches for nothing,
// or a job naming "(pending)" would resume every key kept cold that way.
func venueMatches(s Stamp, jobVenue string) bool {
	if jobVenue == "" || strings.ContainsAny(jobVenue, "()") {
		return false
	}
	switch s.State {
	case StampAbsent:
		return jobVenue == UnstampedVenue
	case StampPresent:
		return s.Value == jobVenue
	}
	return false
}

// contextTooFull reports whether a usable reading is at or over pct percent.
// No reading, a window that is not positive, negative tokens, or a reading
// stamped with a model other than the job's are no measurement, and no
// measurement passes: the rung invents no denominator. Unknown on either side
// is usable, so a deployment that names no models keeps its bound.
func contextTooFull(c *Context, jobModel string, pct int) bool {
	if c == nil || c.Window <= 0 || c.Tokens < 0 {
		return false
	}
	if c.Model != "" && jobModel != "" && c.Model != jobModel {
		return false
	}
	// tokens*100/window >= pct, cross-multiplied in 128 bits so no reading,
	// however large, overflows into a different answer. Exact rational
	// comparison equals floor division for an integer pct.
	tHi, tLo := bits.Mul64(uint64(c.Tokens), 100)
	wHi, wLo := bits.Mul64(uint64(c.Window), uint64(pct))
	return tHi > wHi || (tHi == wHi && tLo >= wLo)
}
