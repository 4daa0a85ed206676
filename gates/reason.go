package gates

import "slices"

// A Reason is the token that names the outcome of a resolve or a promote.
// Tokens are part of the external contract (run records, logs, the CLI's
// JSON) and keep the legacy store's spelling, so every one is a named
// constant here and nowhere else.
type Reason string

// Read-path reasons, in ladder order (see Ladder).
const (
	Resumed            Reason = "resumed"               // every rung passed
	Absent             Reason = "absent"                // rungs 1 and 3: no transcript, or 0 bytes
	NotARegularFile    Reason = "not-a-regular-file"    // rung 2: a link, FIFO, device or directory
	TooLarge           Reason = "too-large"             // rung 4: over Bounds.MaxBytes
	MetaUnreadable     Reason = "meta-unreadable"       // rung 4a: meta.db unopenable or damaged
	MetaMovedAside     Reason = "meta-moved-aside"      // rung 4b: a repair moved a damaged meta.db aside
	Expired            Reason = "expired"               // rung 5: last promotion older than Bounds.TTL
	VenueChanged       Reason = "venue-changed"         // rung 6: stamped in another venue, or unreadable
	PiVersionChanged   Reason = "pi-version-changed"    // rung 7: another pi, or a version unknown on either side
	ResumeChainTooLong Reason = "resume-chain-too-long" // rung 8: at or over Bounds.MaxResumeChain
	ContextTooFull     Reason = "context-too-full"      // rung 9: at or over Bounds.MaxContextPct
	Unparseable        Reason = "unparseable"           // rung 10: first line not a session header
	ConversationTooOld Reason = "conversation-too-old"  // rung 11: header older than Bounds.MaxAge, or unreadable
	// TranscriptReplaced is decided by the store after the copy, when the
	// bytes it copied are not the ones the sidecars describe; Evaluate never
	// returns it, but it belongs to the same vocabulary.
	TranscriptReplaced Reason = "transcript-replaced"
	// PromotionLost is decided by the store when a committed promotion's
	// temp is damaged and the transcript in place is neither the promoted
	// one nor the one before it. A temp that is gone cannot be told from a
	// promotion that landed; that key is TranscriptReplaced.
	PromotionLost Reason = "promotion-lost"
	// StoreUnavailable is decided by a store whose records live in a
	// service (a fleet's etcd) that did not answer within its request
	// timeout, or whose shared transcripts dir is itself gone, not a
	// directory or stale: nothing about the key could be read, so nothing
	// is resumed. Like locked, it comes before any rung is judged.
	StoreUnavailable Reason = "store-unavailable"
)

// Promote outcomes. A refused promote also uses Absent, NotARegularFile and
// TooLarge, for a staged file that fails the first rungs.
const (
	Promoted      Reason = "promoted"       // the staged transcript is now the key's
	Locked        Reason = "locked"         // the key's lock was not had in time (by a resolve too); nothing changed
	PromoteFailed Reason = "promote-failed" // a fault; the error returned beside it says which
	// Superseded: the key's transcript is no longer the one the job's
	// ticket was resolved from (another job promoted first, or the key was
	// changed or removed since).
	Superseded Reason = "superseded"
	// TranscriptRewritten: the staged file does not begin with exactly the
	// bytes the job was given; pi only ever appends to its session file.
	TranscriptRewritten Reason = "transcript-rewritten"
	// RunIncomplete: the caller required an answered run, and the run's
	// shape was another.
	RunIncomplete Reason = "run-incomplete"
)

// reasons is the closed vocabulary. Kept unexported so no caller can grow it;
// Reasons hands out copies.
var reasons = [...]Reason{
	Resumed, Absent, NotARegularFile, TooLarge, MetaUnreadable, MetaMovedAside, Expired,
	VenueChanged, PiVersionChanged, ResumeChainTooLong, ContextTooFull,
	Unparseable, ConversationTooOld, TranscriptReplaced, PromotionLost, StoreUnavailable,
	Promoted, Locked, PromoteFailed, Superseded, TranscriptRewritten, RunIncomplete,
}

// Reasons returns every token, read-path reasons in ladder order first, then
// the promote outcomes. The slice is the caller's to keep.
func Reasons() []Reason {
	out := make([]Reason, len(reasons))
	copy(out, reasons[:])
	return out
}

// coldReasons are the reasons a resolve cold-starts with: each rung's, in
// the ladder's order, then the two the store decides before any rung is
// judged.
var coldReasons = func() []Reason {
	var out []Reason
	for _, g := range ladder {
		if !slices.Contains(out, g.Reason) {
			out = append(out, g.Reason)
		}
	}
	return append(out, Locked, StoreUnavailable)
}()

// ColdReasons returns the reasons a resolve cold-starts with, the ladder's
// in its order first. The slice is the caller's to keep.
func ColdReasons() []Reason { return slices.Clone(coldReasons) }

// Valid reports whether r is one of the named tokens.
func (r Reason) Valid() bool {
	for _, known := range reasons {
		if r == known {
			return true
		}
	}
	return false
}

// MaxTokenBytes bounds a token's length; the longest named one is 21 bytes.
const MaxTokenBytes = 64

// IsResolveVerdict reports whether r can be a resolve's reason: resumed, a
// cold start's, or a token this binary does not know but which has a
// token's form (lowercase words joined by hyphens, at most MaxTokenBytes),
// as a newer sessdb's would. A promote outcome is not one. A job's ticket
// carries its resolve's reason to the history, so a binary rolled back
// under running jobs still promotes them, where a reason that is no token
// at all is refused.
func (r Reason) IsResolveVerdict() bool {
	if r == Resumed || slices.Contains(coldReasons, r) {
		return true
	}
	return !r.Valid() && r.wellFormed()
}

// wellFormed reports whether r has a token's form: words of lowercase
// ASCII letters and digits, joined by single hyphens, beginning with a
// letter, at most MaxTokenBytes in all.
func (r Reason) wellFormed() bool {
	if len(r) == 0 || len(r) > MaxTokenBytes || r[0] < 'a' || r[0] > 'z' || r[len(r)-1] == '-' {
		return false
	}
	for i := 1; i < len(r); i++ {
		switch c := r[i]; {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '-' && r[i-1] != '-':
		default:
			return false
		}
	}
	return true
}

// Polarity reports how the rung that names r treats an input it cannot read.
// Reasons no rung names (resumed, the promote outcomes, unknown tokens) have
// NoPolarity. absent names two rungs, both without polarity.
func (r Reason) Polarity() Polarity {
	for _, g := range ladder {
		if g.Reason == r {
			return g.Polarity
		}
	}
	return NoPolarity
}

// Polarity is the direction a rung fails in when its input cannot be read.
type Polarity uint8

const (
	// NoPolarity: the rung judges the transcript itself (its lstat facts, its
	// first line), so there is no separate input whose loss could pass or
	// refuse.
	NoPolarity Polarity = iota
	// FailsClosed: an unreadable input refuses the resume. Used where
	// "assume it matches" would silently resume something nobody vouched for.
	FailsClosed
	// FailsOpen: an unreadable input passes. Used by the opt-in bounds, whose
	// sidecars every key older than the bound lacks; refusing on absence would
	// cold-start a whole store the day an operator set the bound.
	FailsOpen
)

// String returns the word DESIGN.md's table uses: "closed", "open" or "".
func (p Polarity) String() string {
	switch p {
	case FailsClosed:
		return "closed"
	case FailsOpen:
		return "open"
	}
	return ""
}
