// Package gates decides whether a key's saved transcript may be handed to a
// job again, and names why not when it may not.
//
// The promise: Evaluate is a pure function of its arguments. It does no I/O,
// reads no clock (the caller passes now), logs nothing and keeps no state, so
// a verdict can be reproduced from a recorded observation, and the same code
// judges a bbolt key dir, a legacy key dir, a fleet's record in etcd and
// anything else that can fill in an Observation. The order of the rungs is
// the contract, not an implementation detail: the first rung that misses
// wins and names itself, and operators read the reason as "this, and
// nothing checked before it, stopped the resume". The order, the tokens
// and the polarities are those of the legacy store (edgehero/pi-dispatch,
// worker/src/session-store.mjs) with two rungs added, 4a and 4b:
//
//	#      reason                  polarity  what misses
//	1      absent                            transcript missing
//	2      not-a-regular-file                transcript (or its key dir) is not a regular file / real dir
//	3      absent                            transcript is 0 bytes
//	4      too-large                         over Bounds.MaxBytes (PI_SESSION_MAX_BYTES)
//	4a     meta-unreadable         closed    meta.db present but unopenable or damaged
//	4b     meta-moved-aside                  no meta.db (or an empty one, a lock's), because a repair moved a damaged one aside
//	5      expired                           last promotion older than Bounds.TTL (PI_SESSIONS_TTL_DAYS)
//	6      venue-changed           closed    venue stamp differs from the job's venue, or is unreadable
//	7      pi-version-changed      closed    job declares no pi version, or stamp unknown/unreadable/different
//	8      resume-chain-too-long   open      chain >= Bounds.MaxResumeChain (PI_SESSION_MAX_RESUME_CHAIN)
//	9      context-too-full        open      same-model reading >= Bounds.MaxContextPct (PI_SESSION_MAX_CONTEXT_PCT)
//	10     unparseable                       first line not JSON, or type != "session"
//	11     conversation-too-old    closed    header timestamp unreadable or older than Bounds.MaxAge (PI_SESSION_MAX_AGE_DAYS)
//	after  transcript-replaced     closed    the copy does not match the transcript's recorded identity
//	after  promotion-lost          closed    a committed promotion's temp is damaged, and neither it nor the one before is in place
//	ok     resumed
//
// Two more reasons come from the store, outside the ladder: locked (the key's
// lock was not had in time) and store-unavailable (on a fleet: etcd did not
// answer, or the shared transcripts dir itself is gone, not a directory or
// stale). Reasons lists every token.
// "closed" means an input that cannot be read refuses the resume; "open"
// means it passes (an absent or corrupt counter is a chain of 0, a missing
// context reading is no measurement). A blank polarity means the rung judges
// the transcript itself and has no separate input to be unreadable. Ladder
// returns this table as data, for README and dump.
//
// Every bound is off at its zero value, and a bound that is off ignores its
// input entirely: with the three eligibility bounds off (MaxResumeChain,
// MaxContextPct, MaxAge) the verdict is exactly that of rungs 1-7, 4a, 4b and 10,
// whatever the chain, the context reading or the header timestamp say.
//
// Caveat: Evaluate judges what it is told. Whether the observation is true is
// the caller's business: reading sidecars without following links, taking the
// transcript's facts and its first line from one consistent view, and deciding
// transcript-replaced after the copy (Evaluate never returns it; it only names
// it). The reading of the context rung and the header timestamp comes from
// the container, so those two rungs bound an honest agent, not a hostile one.
package gates
