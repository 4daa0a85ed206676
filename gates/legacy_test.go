package gates

import (
	"testing"
	"time"
)

// Ports of the legacy suite (worker/test/session-store.test.mjs, listed in
// reference/legacy-store.md section 8.1) whose behaviour is the ladder's
// alone. Each test names the legacy test number it carries over. Behaviours
// that live in the readers (planted links, oversized sidecars, odd counter
// text) are ported in store/legacy; staging, promotion, locks and the reaper
// belong to the store.

// resumed and refused keep the port's assertions one line each.
func resumed(t *testing.T, f fixture, why string) {
	t.Helper()
	if v := f.eval(); v != (Verdict{Resume: true, Reason: Resumed}) {
		t.Errorf("%s: got %+v, want resumed", why, v)
	}
}

func refused(t *testing.T, f fixture, want Reason, why string) {
	t.Helper()
	if v := f.eval(); v != cold(want) {
		t.Errorf("%s: got %+v, want %s", why, v, want)
	}
}

// legacy 1: a first run finds no transcript and cold-starts as absent; so
// does an empty one (the shape a cold start stages).
func TestLegacy01ColdStartIsAbsent(t *testing.T) {
	refused(t, with(func(f *fixture) { f.obs.Transcript = Transcript{} }), Absent, "no transcript")
	refused(t, with(func(f *fixture) { f.obs.Transcript.Size = 0 }), Absent, "0-byte transcript")
}

// legacy 2: a seeded transcript resumes.
func TestLegacy02SeededTranscriptResumes(t *testing.T) {
	resumed(t, base(), "seeded transcript")
}

// legacy 3: a symlink in the store is refused, never followed.
func TestLegacy03SymlinkRefused(t *testing.T) {
	refused(t, with(func(f *fixture) { f.obs.Transcript.Regular = false }), NotARegularFile, "canonical is a link")
}

// legacy 5: mtime 3 days old, TTL 1 day; mtime is the authority when the
// store has no promotion record (a legacy key dir).
func TestLegacy05ExpiredByMtime(t *testing.T) {
	f := with(func(f *fixture) {
		f.b.TTL = day
		f.obs.LastPromotion = time.Time{}
		f.obs.Transcript.ModTime = now.Add(-3 * day)
	})
	refused(t, f, Expired, "3-day-old mtime, TTL 1")
}

// legacy 6: a stamp from another pi, and an image declaring no pi.
func TestLegacy06PiVersionChanged(t *testing.T) {
	refused(t, with(func(f *fixture) { f.obs.PiVersion.Value = "0.70.0" }), PiVersionChanged, "stamp mismatch")
	refused(t, with(func(f *fixture) { f.job.PiVersion = "" }), PiVersionChanged, "image declares no pi")
}

// legacy 7: oversized, and a first line that is not JSON.
func TestLegacy07OversizedOrUnparseable(t *testing.T) {
	refused(t, with(func(f *fixture) { f.obs.Transcript.Size = f.b.MaxBytes + 1 }), TooLarge, "oversized")
	refused(t, with(func(f *fixture) { f.obs.Header = Header{} }), Unparseable, "first line not JSON")
}

// legacy 15: the age bound reads the header's clock, which a fresh mtime
// cannot hide.
func TestLegacy15AgeBoundReadsHeaderClock(t *testing.T) {
	f := with(func(f *fixture) {
		f.b.MaxAge = 30 * day
		f.obs.Transcript.ModTime, f.obs.LastPromotion = now, now
		f.obs.Header.Timestamp = now.Add(-45 * day)
	})
	refused(t, f, ConversationTooOld, "45-day header, fresh mtime, bound 30")
}

// legacy 16: inside the age bound still resumes.
func TestLegacy16InsideAgeBoundResumes(t *testing.T) {
	resumed(t, with(func(f *fixture) { f.b.MaxAge, f.obs.Header.Timestamp = 30*day, now.Add(-29*day) }), "29-day header, bound 30")
}

// legacy 17: an unreadable conversation clock fails closed (no timestamp,
// a number, garbage: the header reader reports all three as not OK), and a
// future one does not.
func TestLegacy17UnreadableClockClosedFutureOpen(t *testing.T) {
	refused(t, with(func(f *fixture) { f.obs.Header.TimestampOK = false }), ConversationTooOld, "unreadable timestamp")
	resumed(t, with(func(f *fixture) { f.obs.Header.Timestamp = now.Add(time.Minute) }), "+1 minute")
	resumed(t, with(func(f *fixture) { f.obs.Header.Timestamp = now.AddDate(1, 0, 0) }), "+1 year")
}

// legacy 18: an unset age bound ignores the header clock entirely.
func TestLegacy18UnsetAgeBoundIgnoresClock(t *testing.T) {
	resumed(t, with(func(f *fixture) { f.b.MaxAge, f.obs.Header.Timestamp = 0, now.AddDate(-10, 0, 0) }), "10-year header, bound off")
}

// legacy 19: a corrupt transcript is corrupt, not old.
func TestLegacy19UnparseableBeatsAge(t *testing.T) {
	f := with(func(f *fixture) {
		f.obs.Header = Header{IsSession: false, Timestamp: now.AddDate(-1, 0, 0), TimestampOK: true}
	})
	refused(t, f, Unparseable, "corrupt and old")
	refused(t, with(func(f *fixture) { f.obs.Header = Header{} }), Unparseable, "corrupt, no timestamp")
}

// legacy 20: bound 3; the counter the store keeps reads 0, 1, 2 on the
// three resumed deliveries, 3 on the fourth, which refuses; its cold
// promotion resets to 0 and the fifth resumes.
func TestLegacy20ChainBoundOverFiveRuns(t *testing.T) {
	want := []Reason{Resumed, Resumed, Resumed, ResumeChainTooLong, Resumed}
	chain := uint64(0)
	for run, w := range want {
		f := with(func(f *fixture) { f.b.MaxResumeChain, f.obs.ResumeChain = 3, chain })
		v := f.eval()
		if v.Reason != w {
			t.Fatalf("run %d (chain %d): got %s, want %s", run+1, chain, v.Reason, w)
		}
		if v.Resume {
			chain++
		} else {
			chain = 0
		}
	}
}

// legacy 25: the counter is kept with the bound off, so setting the bound
// on a deep lineage refuses on the very next job.
func TestLegacy25BoundSetLaterIsHonest(t *testing.T) {
	deep := func(f *fixture) { f.obs.ResumeChain = 40 }
	resumed(t, with(deep, func(f *fixture) { f.b.MaxResumeChain = 0 }), "chain 40, bound off")
	refused(t, with(deep, func(f *fixture) { f.b.MaxResumeChain = 3 }), ResumeChainTooLong, "chain 40, bound 3")
}

// legacy 26: a missing or unreadable counter is a chain of 0, never an
// exhausted one (store/legacy turns the odd texts into 0).
func TestLegacy26UnreadableChainIsZero(t *testing.T) {
	resumed(t, with(func(f *fixture) { f.b.MaxResumeChain, f.obs.ResumeChain = 1, 0 }), "chain 0, bound 1")
}

// legacy 27: the chain bound refuses before the transcript is read at all.
func TestLegacy27ChainBeatsCorruptBody(t *testing.T) {
	f := with(func(f *fixture) { f.obs.ResumeChain = f.b.MaxResumeChain; f.obs.Header = Header{} })
	refused(t, f, ResumeChainTooLong, "exhausted chain, corrupt body")
}

// legacy 29: at or over the threshold refuses; below resumes.
func TestLegacy29ContextThreshold(t *testing.T) {
	for tokens, want := range map[int64]Reason{159999: Resumed, 160000: ContextTooFull, 180000: ContextTooFull} {
		f := with(func(f *fixture) {
			f.b.MaxContextPct = 80
			f.obs.Context = &Context{Tokens: tokens, Window: 200000}
		})
		if v := f.eval(); v.Reason != want {
			t.Errorf("%d of 200000 at 80 %%: got %s, want %s", tokens, v.Reason, want)
		}
	}
}

// legacy 30: with no measurement the gate passes and invents no
// denominator, even at 1 %.
func TestLegacy30NoMeasurementPasses(t *testing.T) {
	for name, c := range map[string]*Context{
		"absent": nil, "window 0": {Tokens: 10, Window: 0},
		"negative tokens": {Tokens: -10, Window: 200000}, "negative window": {Tokens: 10, Window: -200000},
	} {
		resumed(t, with(func(f *fixture) { f.b.MaxContextPct, f.obs.Context = 1, c }), name)
	}
}

// legacy 31: an unset context bound never consults the reading.
func TestLegacy31UnsetContextBoundIgnoresReading(t *testing.T) {
	resumed(t, with(func(f *fixture) {
		f.b.MaxContextPct = 0
		f.obs.Context = &Context{Tokens: 1 << 40, Window: 1}
	}), "overfull reading, bound off")
}

// legacy 33: a reading stamped with another model is not a reading about
// this one, in both directions; an unstamped reading applies.
func TestLegacy33ForeignModelIgnored(t *testing.T) {
	full := func(m string) func(*fixture) {
		return func(f *fixture) { f.obs.Context = &Context{Tokens: 190000, Window: 200000, Model: m} }
	}
	resumed(t, with(full("openai/gpt-5")), "full reading from another model")
	refused(t, with(full(model)), ContextTooFull, "full reading from this model")
	refused(t, with(full("")), ContextTooFull, "unstamped full reading")
	refused(t, with(full("openai/gpt-5"), func(f *fixture) { f.job.Model = "" }), ContextTooFull, "job names no model")
	// The other direction: an empty reading from another model does not
	// vouch for this one either; it simply is not consulted.
	resumed(t, with(func(f *fixture) { f.obs.Context = &Context{Tokens: 0, Window: 200000, Model: "openai/gpt-5"} }), "empty foreign reading")
}

// legacy 37, 38: a stamp from another venue cold-starts; its own venue
// resumes; an unstamped transcript was written on local, whatever the
// deployment's default venue is now.
func TestLegacy37And38Venue(t *testing.T) {
	podman := func(f *fixture) { f.obs.Venue = Stamp{State: StampPresent, Value: "podman"} }
	refused(t, with(podman), VenueChanged, "podman stamp, local job")
	resumed(t, with(podman, func(f *fixture) { f.job.Venue = "podman" }), "podman stamp, podman job")
	unstamped := func(f *fixture) { f.obs.Venue = Stamp{} }
	resumed(t, with(unstamped), "unstamped, local job")
	refused(t, with(unstamped, func(f *fixture) { f.job.Venue = "podman" }), VenueChanged, "unstamped, podman job")
}

// legacy 39, 40: venue-changed names itself ahead of both pi-version arms
// and ahead of the body, and expired still names itself first.
func TestLegacy39And40VenuePlacement(t *testing.T) {
	podman := func(f *fixture) { f.obs.Venue = Stamp{State: StampPresent, Value: "podman"} }
	refused(t, with(podman, func(f *fixture) { f.job.PiVersion = "" }), VenueChanged, "venue and no image pi")
	refused(t, with(podman, func(f *fixture) { f.obs.PiVersion.Value = "0.1.0" }), VenueChanged, "venue and stamp mismatch")
	refused(t, with(podman, func(f *fixture) { f.obs.LastPromotion = now.AddDate(-1, 0, 0) }), Expired, "venue and expired")
	refused(t, with(podman, func(f *fixture) { f.obs.Header = Header{} }), VenueChanged, "venue and corrupt body")
}

// legacy 41, 48, 49, 42, 47/61: a stamp that exists but cannot be read
// (dangling link, link, empty, oversized, directory, an lstat error other
// than absence) fails closed; a job whose venue cannot be resolved never
// resumes, even where the stamp cannot be read either; a pending stamp
// matches no venue.
func TestLegacy41To49VenueFailsClosed(t *testing.T) {
	refused(t, with(func(f *fixture) { f.obs.Venue = Stamp{State: StampUnreadable} }), VenueChanged, "unreadable stamp")
	refused(t, with(func(f *fixture) { f.job.Venue = "" }), VenueChanged, "unresolvable job venue")
	refused(t, with(func(f *fixture) { f.job.Venue, f.obs.Venue = "", Stamp{State: StampUnreadable} }), VenueChanged, "both unknown")
	refused(t, with(func(f *fixture) { f.job.Venue, f.obs.Venue = "", Stamp{} }), VenueChanged, "unresolvable job, unstamped")
	refused(t, with(func(f *fixture) { f.obs.Venue = Stamp{State: StampPresent, Value: "(pending)"} }), VenueChanged, "pending stamp")
}

// legacy 56, 57: a link at pi-version cannot decide the gate; a promotion
// that knew no pi version leaves an empty stamp, and the next job cold-starts.
func TestLegacy56And57PiVersionStampUnusable(t *testing.T) {
	refused(t, with(func(f *fixture) { f.obs.PiVersion = Stamp{State: StampUnreadable} }), PiVersionChanged, "link at pi-version")
	refused(t, with(func(f *fixture) { f.obs.PiVersion = Stamp{State: StampPresent} }), PiVersionChanged, "empty stamp")
}
