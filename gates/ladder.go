package gates

// A Gate is one row of the ladder table, for printing (README, dump, help).
// It describes Evaluate; it does not drive it. Evaluate is written out rung
// by rung so each rung can be read against the spec, and a test walks this
// table against Evaluate so the two cannot drift apart.
type Gate struct {
	// Number is the rung's label in DESIGN.md: "1".."11", "4a", "4b", or "after"
	// for the check the store makes after the copy.
	Number   string
	Reason   Reason   // the token the rung names when it misses
	Polarity Polarity // how the rung treats an input it cannot read
	// Knob is the environment variable whose bound switches the rung on, ""
	// for a rung that always runs.
	Knob string
	// Summary says in one line what makes the rung miss.
	Summary string
}

// ladder is in evaluation order; the "after" rows are last because the
// store judges them after Evaluate has passed every other rung.
var ladder = [...]Gate{
	{"1", Absent, NoPolarity, "", "transcript missing"},
	{"2", NotARegularFile, NoPolarity, "", "transcript not a regular file, or key dir not a real directory (links never followed)"},
	{"3", Absent, NoPolarity, "", "transcript is 0 bytes"},
	{"4", TooLarge, NoPolarity, "PI_SESSION_MAX_BYTES", "transcript over the byte cap"},
	{"4a", MetaUnreadable, FailsClosed, "", "meta.db present but unopenable or damaged"},
	{"4b", MetaMovedAside, NoPolarity, "", "no meta.db (or an empty one, a lock's), because a repair moved a damaged one aside"},
	{"5", Expired, NoPolarity, "PI_SESSIONS_TTL_DAYS", "last completed promotion older than the TTL"},
	{"6", VenueChanged, FailsClosed, "", "venue stamp differs from the job's venue, is unreadable, or the job's venue is unknown"},
	{"7", PiVersionChanged, FailsClosed, "", "job declares no pi version, or the stamp is unknown, unreadable or different"},
	{"8", ResumeChainTooLong, FailsOpen, "PI_SESSION_MAX_RESUME_CHAIN", "consecutive host deliveries at or over the bound"},
	{"9", ContextTooFull, FailsOpen, "PI_SESSION_MAX_CONTEXT_PCT", "same-model context reading at or over the percentage"},
	{"10", Unparseable, NoPolarity, "", "first line not JSON, over 64 KiB, or its type is not \"session\""},
	{"11", ConversationTooOld, FailsClosed, "PI_SESSION_MAX_AGE_DAYS", "header timestamp unreadable, or older than the age bound"},
	{"after", TranscriptReplaced, FailsClosed, "", "the copy does not match the transcript's recorded size and checksum"},
	{"after", PromotionLost, FailsClosed, "", "a committed promotion's temp is damaged, and the transcript in place is neither it nor the one before it"},
}

// Ladder returns the ladder table in evaluation order, the store's "after"
// rows last. The slice is the caller's to keep.
func Ladder() []Gate {
	out := make([]Gate, len(ladder))
	copy(out, ladder[:])
	return out
}
