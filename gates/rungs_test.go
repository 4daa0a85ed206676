package gates

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// caseTable runs named changes against the base fixture and checks the
// reason each one ends on.
type caseTable []struct {
	name string
	set  func(*fixture)
	want Reason
}

func (ct caseTable) run(t *testing.T) {
	t.Helper()
	for _, c := range ct {
		t.Run(c.name, func(t *testing.T) {
			v := with(c.set).eval()
			if v.Reason != c.want || v.Resume != (c.want == Resumed) {
				t.Fatalf("got %+v, want %s", v, c.want)
			}
		})
	}
}

func TestRungTranscriptFacts(t *testing.T) {
	caseTable{
		{"missing", func(f *fixture) { f.obs.Transcript = Transcript{} }, Absent},
		{"missing, other facts stale", func(f *fixture) { f.obs.Transcript.Exists = false }, Absent},
		{"not regular (link, dir, FIFO, or key dir a link)", func(f *fixture) { f.obs.Transcript.Regular = false }, NotARegularFile},
		{"not regular and empty", func(f *fixture) { f.obs.Transcript.Regular, f.obs.Transcript.Size = false, 0 }, NotARegularFile},
		{"0 bytes", func(f *fixture) { f.obs.Transcript.Size = 0 }, Absent},
		{"negative size", func(f *fixture) { f.obs.Transcript.Size = -1 }, Absent},
		{"1 byte", func(f *fixture) { f.obs.Transcript.Size = 1 }, Resumed},
		{"exactly the cap", func(f *fixture) { f.obs.Transcript.Size = 8 << 20 }, Resumed},
		{"one byte over the cap", func(f *fixture) { f.obs.Transcript.Size = 8<<20 + 1 }, TooLarge},
		{"no cap", func(f *fixture) { f.b.MaxBytes, f.obs.Transcript.Size = 0, math.MaxInt64 }, Resumed},
		{"db damaged", func(f *fixture) { f.obs.MetaUnreadable = true }, MetaUnreadable},
	}.run(t)
}

func TestRungExpired(t *testing.T) {
	ttl := 14 * day
	caseTable{
		{"exactly the TTL ago (strict >)", func(f *fixture) { f.obs.LastPromotion = now.Add(-ttl) }, Resumed},
		{"a nanosecond past the TTL", func(f *fixture) { f.obs.LastPromotion = now.Add(-ttl - 1) }, Expired},
		// The db's record is the clock; an mtime anyone can touch is only
		// the fallback when there is no record.
		{"record old, mtime fresh", func(f *fixture) {
			f.obs.LastPromotion, f.obs.Transcript.ModTime = now.Add(-ttl-day), now
		}, Expired},
		{"record fresh, mtime old", func(f *fixture) {
			f.obs.LastPromotion, f.obs.Transcript.ModTime = now, now.Add(-ttl-day)
		}, Resumed},
		{"no record, mtime old", func(f *fixture) {
			f.obs.LastPromotion, f.obs.Transcript.ModTime = time.Time{}, now.Add(-ttl-day)
		}, Expired},
		{"no record, mtime fresh", func(f *fixture) {
			f.obs.LastPromotion, f.obs.Transcript.ModTime = time.Time{}, now.Add(-ttl)
		}, Resumed},
		{"promotion in the future", func(f *fixture) { f.obs.LastPromotion = now.Add(365 * day) }, Resumed},
		{"TTL off", func(f *fixture) { f.b.TTL, f.obs.LastPromotion = 0, now.AddDate(-20, 0, 0) }, Resumed},
	}.run(t)
}

func TestRungVenue(t *testing.T) {
	present := func(v string) Stamp { return Stamp{State: StampPresent, Value: v} }
	cases := []struct {
		stamp Stamp
		job   string
		want  Reason
	}{
		{present("local"), "local", Resumed},
		{present("podman"), "podman", Resumed},
		{present("podman"), "local", VenueChanged},
		{present("local"), "podman", VenueChanged},
		{present("Local"), "local", VenueChanged}, // exact compare
		{present("(pending)"), "local", VenueChanged},
		// No venue name has parentheses: a job that names "(pending)" must
		// not resume the keys the sentinel keeps cold everywhere.
		{present("(pending)"), "(pending)", VenueChanged},
		{present("local(1)"), "local(1)", VenueChanged},
		// Either parenthesis alone makes a job venue no venue: a key
		// stamped by such a job's promote stays cold for the next one.
		{present("local)"), "local)", VenueChanged},
		{present("(local"), "(local", VenueChanged},
		{present(""), "local", VenueChanged},
		{Stamp{}, "local", Resumed}, // unstamped means local
		{Stamp{}, "podman", VenueChanged},
		{Stamp{State: StampUnreadable}, "local", VenueChanged},
		{Stamp{State: StampUnreadable, Value: "local"}, "local", VenueChanged},
		{present("local"), "", VenueChanged},
		{present(""), "", VenueChanged}, // unresolvable job venue matches nothing, not even an empty stamp
		{Stamp{}, "", VenueChanged},
		{Stamp{State: StampUnreadable}, "", VenueChanged},
		{Stamp{State: 99, Value: "local"}, "local", VenueChanged}, // an unknown state vouches for nothing
	}
	for _, c := range cases {
		f := with(func(f *fixture) { f.obs.Venue, f.job.Venue = c.stamp, c.job })
		if v := f.eval(); v.Reason != c.want {
			t.Errorf("stamp %v %q, job venue %q: got %s, want %s", c.stamp.State, c.stamp.Value, c.job, v.Reason, c.want)
		}
	}
}

func TestRungPiVersion(t *testing.T) {
	caseTable{
		{"same", func(f *fixture) {}, Resumed},
		{"different", func(f *fixture) { f.obs.PiVersion.Value = "0.80.8" }, PiVersionChanged},
		{"exact compare", func(f *fixture) { f.obs.PiVersion.Value = "v0.80.7" }, PiVersionChanged},
		{"stamp absent", func(f *fixture) { f.obs.PiVersion = Stamp{} }, PiVersionChanged},
		{"stamp unreadable", func(f *fixture) { f.obs.PiVersion.State = StampUnreadable }, PiVersionChanged},
		{"stamp empty (written for an unknown pi)", func(f *fixture) { f.obs.PiVersion.Value = "" }, PiVersionChanged},
		{"job declares none", func(f *fixture) { f.job.PiVersion = "" }, PiVersionChanged},
		{"both empty", func(f *fixture) { f.job.PiVersion, f.obs.PiVersion.Value = "", "" }, PiVersionChanged},
	}.run(t)
}

func TestRungResumeChain(t *testing.T) {
	chain := func(n, bound uint64) func(*fixture) {
		return func(f *fixture) { f.obs.ResumeChain, f.b.MaxResumeChain = n, bound }
	}
	caseTable{
		{"below", chain(2, 3), Resumed},
		{"at", chain(3, 3), ResumeChainTooLong},
		{"over", chain(40, 3), ResumeChainTooLong},
		{"saturated counter", chain(math.MaxUint64, 3), ResumeChainTooLong},
		{"bound 1, fresh lineage", chain(0, 1), Resumed},
		{"bound 1, one delivery", chain(1, 1), ResumeChainTooLong},
		{"largest bound", chain(math.MaxUint64-1, math.MaxUint64), Resumed},
		{"off", chain(math.MaxUint64, 0), Resumed},
	}.run(t)
}

func TestRungContext(t *testing.T) {
	reading := func(tokens, window int64, m string, pct int) func(*fixture) {
		return func(f *fixture) {
			f.obs.Context = &Context{Tokens: tokens, Window: window, Model: m}
			f.b.MaxContextPct = pct
		}
	}
	caseTable{
		// The acceptance figures: 80 % of 200000.
		{"159999 of 200000 at 80", reading(159999, 200000, model, 80), Resumed},
		{"160000 of 200000 at 80", reading(160000, 200000, model, 80), ContextTooFull},
		{"180000 of 200000 at 80", reading(180000, 200000, model, 80), ContextTooFull},
		{"full at 100", reading(200000, 200000, model, 100), ContextTooFull},
		{"one short of full at 100", reading(199999, 200000, model, 100), Resumed},
		{"over the window", reading(300000, 200000, model, 100), ContextTooFull},
		{"empty at 1", reading(0, 200000, model, 1), Resumed},
		{"1 % at 1", reading(2000, 200000, model, 1), ContextTooFull},
		{"fraction under 1 % at 1", reading(1999, 200000, model, 1), Resumed},
		// Cross-multiplication must not overflow: floats or int64 products
		// would get these wrong.
		{"huge, just under", reading(math.MaxInt64/100*80-1, math.MaxInt64/100*100, model, 80), Resumed},
		{"huge, at", reading(math.MaxInt64/100*80, math.MaxInt64/100*100, model, 80), ContextTooFull},
		{"max tokens, max window at 100", reading(math.MaxInt64, math.MaxInt64, model, 100), ContextTooFull},
		{"max tokens, max window at 99", reading(math.MaxInt64, math.MaxInt64, model, 99), ContextTooFull},
		{"max-1 of max at 100", reading(math.MaxInt64-1, math.MaxInt64, model, 100), Resumed},
		// Products whose high 64 bits differ: the high words decide, and
		// the low words say nothing (1*100 is over 2^62*100's low word, 0).
		{"max tokens, max window at 50", reading(math.MaxInt64, math.MaxInt64, model, 50), ContextTooFull},
		{"1 token of 2^62 at 100", reading(1, 1<<62, model, 100), Resumed},
		{"no reading", func(f *fixture) { f.obs.Context = nil }, Resumed},
		{"window 0", reading(5, 0, model, 1), Resumed},
		{"negative window", reading(5, -200000, model, 1), Resumed},
		{"negative tokens", reading(-1, 200000, model, 1), Resumed},
		{"foreign model", reading(199999, 200000, "openai/gpt-5", 80), Resumed},
		{"unstamped reading", reading(199999, 200000, "", 80), ContextTooFull},
		{"job model unknown", func(f *fixture) { reading(199999, 200000, "openai/gpt-5", 80)(f); f.job.Model = "" }, ContextTooFull},
		// The store normalises the job's model; the stamp is compared as
		// written, as the legacy reader did.
		{"stamp differs only in case", reading(199999, 200000, "Anthropic/Claude-Sonnet-4", 80), Resumed},
		{"off", reading(200000, 200000, model, 0), Resumed},
	}.run(t)
}

func TestRungHeader(t *testing.T) {
	age := 30 * day
	caseTable{
		{"not a session header", func(f *fixture) { f.obs.Header = Header{} }, Unparseable},
		{"not a session header, timestamp fine", func(f *fixture) { f.obs.Header.IsSession = false }, Unparseable},
		{"exactly the bound (strict >)", func(f *fixture) { f.obs.Header.Timestamp = now.Add(-age) }, Resumed},
		{"a nanosecond past the bound", func(f *fixture) { f.obs.Header.Timestamp = now.Add(-age - 1) }, ConversationTooOld},
		{"timestamp unreadable", func(f *fixture) { f.obs.Header.TimestampOK = false }, ConversationTooOld},
		{"zero timestamp marked readable", func(f *fixture) { f.obs.Header.Timestamp = time.Time{} }, ConversationTooOld},
		{"a minute in the future", func(f *fixture) { f.obs.Header.Timestamp = now.Add(time.Minute) }, Resumed},
		{"far future", func(f *fixture) { f.obs.Header.Timestamp = now.AddDate(1000, 0, 0) }, Resumed},
		{"off, ancient", func(f *fixture) { f.b.MaxAge, f.obs.Header.Timestamp = 0, now.AddDate(-10, 0, 0) }, Resumed},
		{"off, unreadable", func(f *fixture) { f.b.MaxAge, f.obs.Header.TimestampOK = 0, false }, Resumed},
	}.run(t)
}

// TestProperties checks, over random observations, what must hold for every
// input: a verdict resumes exactly when it says resumed, never names the
// store's own reason, and with every bound off does not depend on a bound's
// input.
func TestProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	stamp := func(values ...string) Stamp {
		return Stamp{State: StampState(rng.IntN(3)), Value: pick(values...)}
	}
	ago := func() time.Time { return now.Add(-time.Duration(rng.Int64N(int64(60 * day)))) }
	for i := 0; i < 20000; i++ {
		obs := Observation{
			Transcript:     Transcript{Exists: rng.IntN(8) > 0, Regular: rng.IntN(8) > 0, Size: rng.Int64N(4) * rng.Int64N(16<<20), ModTime: ago()},
			MetaUnreadable: rng.IntN(8) == 0,
			Venue:          stamp("local", "podman", ""),
			PiVersion:      stamp("0.80.7", "0.79.0", ""),
			ResumeChain:    rng.Uint64N(6),
			Header:         Header{IsSession: rng.IntN(4) > 0, Timestamp: ago(), TimestampOK: rng.IntN(4) > 0},
		}
		if rng.IntN(2) == 0 {
			obs.LastPromotion = ago()
		}
		if rng.IntN(3) > 0 {
			obs.Context = &Context{Tokens: rng.Int64N(250000) - 10, Window: rng.Int64N(250000) - 10, Model: pick("", model, "openai/gpt-5")}
		}
		job := Job{PiVersion: pick("0.80.7", ""), Venue: pick("local", "podman", ""), Model: pick("", model)}
		b := Bounds{}
		if rng.IntN(2) == 0 {
			b = Bounds{MaxBytes: 8 << 20, TTL: 14 * day, MaxAge: 30 * day, MaxResumeChain: 3, MaxContextPct: 80}
		}
		v := Evaluate(obs, b, job, now)
		if v.Resume != (v.Reason == Resumed) || !v.Reason.Valid() || v.Reason == TranscriptReplaced || v.Reason.Polarity() == FailsClosed && v.Resume {
			t.Fatalf("obs %+v job %+v bounds %+v: incoherent verdict %+v", obs, job, b, v)
		}
		if v2 := Evaluate(obs, b, job, now); v2 != v {
			t.Fatalf("same input, two verdicts: %+v then %+v", v, v2)
		}
		// The three eligibility bounds off: their inputs cannot matter,
		// whatever the byte cap and TTL are.
		off := b
		off.MaxResumeChain, off.MaxContextPct, off.MaxAge = 0, 0, 0
		other := obs
		other.ResumeChain = math.MaxUint64
		other.Context = &Context{Tokens: 1, Window: 1}
		other.Header.TimestampOK = !obs.Header.TimestampOK
		other.Header.Timestamp = time.Time{}
		if v1, v2 := Evaluate(obs, off, job, now), Evaluate(other, off, job, now); v1 != v2 {
			t.Fatalf("eligibility bounds off, only their inputs changed: %+v became %+v (obs %+v)", v1, v2, obs)
		}
		// Every bound off: not even the file's size or age matters.
		other.Transcript.Size = obs.Transcript.Size * (1 << 20)
		other.LastPromotion, other.Transcript.ModTime = time.Time{}, time.Time{}
		if v1, v2 := Evaluate(obs, Bounds{}, job, now), Evaluate(other, Bounds{}, job, now); v1 != v2 {
			t.Fatalf("bounds off, only bound inputs changed: %+v became %+v (obs %+v)", v1, v2, obs)
		}
	}
}
