package gates

import (
	"fmt"
	"math"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

const day = 24 * time.Hour

// now is a fixed instant, like the legacy suite's NOW = 1e9 ms: no test here
// depends on the real clock.
var now = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// fixture is one resolve's inputs. base() passes every rung with every bound
// switched on, so a test that changes one thing and sees a miss knows which
// change caused it.
type fixture struct {
	obs Observation
	b   Bounds
	job Job
}

const model = "anthropic/claude-sonnet-4"

func base() fixture {
	return fixture{
		obs: Observation{
			Transcript:    Transcript{Exists: true, Regular: true, Size: 4096, ModTime: now.Add(-time.Hour)},
			LastPromotion: now.Add(-time.Hour),
			Venue:         Stamp{State: StampPresent, Value: "local"},
			PiVersion:     Stamp{State: StampPresent, Value: "0.80.7"},
			ResumeChain:   2,
			Context:       &Context{Tokens: 100000, Window: 200000, Model: model},
			Header:        Header{IsSession: true, Timestamp: now.Add(-10 * day), TimestampOK: true},
		},
		b: Bounds{
			MaxBytes:       8 << 20,
			TTL:            14 * day,
			MaxAge:         30 * day,
			MaxResumeChain: 3,
			MaxContextPct:  80,
		},
		job: Job{PiVersion: "0.80.7", Venue: "local", Model: model},
	}
}

func (f fixture) eval() Verdict { return Evaluate(f.obs, f.b, f.job, now) }

// with returns the base fixture after the given changes, in order.
func with(changes ...func(*fixture)) fixture {
	f := base()
	for _, c := range changes {
		c(&f)
	}
	return f
}

// rung is one rung of Evaluate with the smallest change that makes it miss
// alone. The list is in the order the rungs are meant to run; the tests check
// it against Ladder() and against Evaluate itself.
type rung struct {
	number string
	reason Reason
	miss   func(*fixture)
}

var rungs = []rung{
	{"1", Absent, func(f *fixture) { f.obs.Transcript.Exists = false }},
	{"2", NotARegularFile, func(f *fixture) { f.obs.Transcript.Regular = false }},
	{"3", Absent, func(f *fixture) { f.obs.Transcript.Size = 0 }},
	{"4", TooLarge, func(f *fixture) { f.obs.Transcript.Size = f.b.MaxBytes + 1 }},
	{"4a", MetaUnreadable, func(f *fixture) { f.obs.MetaUnreadable = true }},
	{"4b", MetaMovedAside, func(f *fixture) { f.obs.MetaMovedAside = true }},
	{"5", Expired, func(f *fixture) { f.obs.LastPromotion = now.Add(-f.b.TTL - time.Second) }},
	{"6", VenueChanged, func(f *fixture) { f.obs.Venue = Stamp{State: StampPresent, Value: "podman"} }},
	{"7", PiVersionChanged, func(f *fixture) { f.obs.PiVersion.Value = "0.79.0" }},
	{"8", ResumeChainTooLong, func(f *fixture) { f.obs.ResumeChain = f.b.MaxResumeChain }},
	{"9", ContextTooFull, func(f *fixture) { f.obs.Context = &Context{Tokens: 180000, Window: 200000, Model: model} }},
	{"10", Unparseable, func(f *fixture) { f.obs.Header.IsSession = false }},
	{"11", ConversationTooOld, func(f *fixture) { f.obs.Header.Timestamp = now.Add(-f.b.MaxAge - time.Second) }},
}

// conflicting pairs of rungs cannot both miss in one observation: a 0-byte
// transcript is never over a non-negative byte cap.
var conflicting = map[[2]string]bool{{"3", "4"}: true}

func TestBaseResumes(t *testing.T) {
	if v := base().eval(); v != (Verdict{Resume: true, Reason: Resumed}) {
		t.Fatalf("base fixture: got %+v, want resumed", v)
	}
}

func TestZeroObservationIsAbsent(t *testing.T) {
	if v := Evaluate(Observation{}, Bounds{}, Job{}, now); v != cold(Absent) {
		t.Fatalf("zero observation: got %+v, want absent", v)
	}
}

func TestEachRungMissesAlone(t *testing.T) {
	for _, r := range rungs {
		t.Run(r.number, func(t *testing.T) {
			if v := with(r.miss).eval(); v != cold(r.reason) {
				t.Fatalf("rung %s alone: got %+v, want %s", r.number, v, r.reason)
			}
		})
	}
}

// TestRungsFollowLadder keeps the printed table honest: the rungs Evaluate
// runs, in the order it runs them, are the rows of Ladder() before "after".
func TestRungsFollowLadder(t *testing.T) {
	l := Ladder()
	after := []Reason{TranscriptReplaced, PromotionLost}
	if len(l) != len(rungs)+len(after) {
		t.Fatalf("Ladder() has %d rows; want the %d rungs then the store's %d \"after\" rows", len(l), len(rungs), len(after))
	}
	for i, r := range after {
		if g := l[len(rungs)+i]; g.Number != "after" || g.Reason != r || g.Summary == "" {
			t.Errorf("row %d: %+v, want the store's \"after\" row for %s", len(rungs)+i, g, r)
		}
	}
	for i, r := range rungs {
		if l[i].Number != r.number || l[i].Reason != r.reason {
			t.Errorf("row %d: Ladder() says %s %s, Evaluate's rung is %s %s", i, l[i].Number, l[i].Reason, r.number, r.reason)
		}
		if l[i].Summary == "" {
			t.Errorf("row %s has no summary", l[i].Number)
		}
	}
}

// TestPrecedence: when two rungs both miss, the earlier names itself. Every
// pair is checked, not only neighbours; only a pair that cannot both miss is
// skipped (see TestConflictingPairsCannotBothMiss).
func TestPrecedence(t *testing.T) {
	for i := range rungs {
		for j := i + 1; j < len(rungs); j++ {
			a, b := rungs[i], rungs[j]
			if conflicting[[2]string{a.number, b.number}] {
				continue
			}
			t.Run(a.number+"-over-"+b.number, func(t *testing.T) {
				// Both orders of setup, so a change cannot hide the other.
				for _, f := range []fixture{with(b.miss, a.miss), with(a.miss, b.miss)} {
					if v := f.eval(); v != cold(a.reason) {
						t.Fatalf("rungs %s and %s both miss: got %+v, want the earlier, %s", a.number, b.number, v, a.reason)
					}
				}
			})
		}
	}
}

// TestConflictingPairsCannotBothMiss justifies each pair TestPrecedence
// skips: the two misses change the same fact, so whichever is applied last
// is the only one left missing.
func TestConflictingPairsCannotBothMiss(t *testing.T) {
	byNumber := map[string]rung{}
	for _, r := range rungs {
		byNumber[r.number] = r
	}
	for pair := range conflicting {
		a, b := byNumber[pair[0]], byNumber[pair[1]]
		if with(a.miss, b.miss).eval() != cold(b.reason) || with(b.miss, a.miss).eval() != cold(a.reason) {
			t.Errorf("pair %s/%s is skipped as conflicting, but both can miss together", a.number, b.number)
		}
	}
}

// TestMissesInLadderOrder: with every rung from i down missing at once, the
// verdict is rung i's; peeling rungs off the top walks the table row by row.
func TestMissesInLadderOrder(t *testing.T) {
	for i, r := range rungs {
		f := base()
		for j := len(rungs) - 1; j >= i; j-- {
			if j == i || !conflicting[[2]string{r.number, rungs[j].number}] {
				rungs[j].miss(&f)
			}
		}
		if v := f.eval(); v != cold(r.reason) {
			t.Errorf("rungs %s.. all missing: got %+v, want %s", r.number, v, r.reason)
		}
	}
}

// TestPolarity checks each rung's declared polarity against what it does
// with an input it cannot read: closed rungs refuse, open rungs pass.
func TestPolarity(t *testing.T) {
	unreadable := map[string][]struct {
		name string
		set  func(*fixture)
	}{
		"4a": {{"damaged db", func(f *fixture) { f.obs.MetaUnreadable = true }}},
		"6": {
			{"stamp unreadable", func(f *fixture) { f.obs.Venue = Stamp{State: StampUnreadable} }},
			{"stamp unreadable, value left behind", func(f *fixture) { f.obs.Venue = Stamp{State: StampUnreadable, Value: "local"} }},
			{"job venue unresolvable", func(f *fixture) { f.job.Venue = "" }},
		},
		"7": {
			{"stamp unreadable", func(f *fixture) { f.obs.PiVersion = Stamp{State: StampUnreadable, Value: "0.80.7"} }},
			{"stamp absent", func(f *fixture) { f.obs.PiVersion = Stamp{} }},
			{"stamp empty", func(f *fixture) { f.obs.PiVersion = Stamp{State: StampPresent} }},
			{"job declares none", func(f *fixture) { f.job.PiVersion = "" }},
		},
		"8": {{"counter unreadable reads as 0", func(f *fixture) { f.obs.ResumeChain = 0 }}},
		"9": {
			{"no reading", func(f *fixture) { f.obs.Context = nil }},
			{"window 0", func(f *fixture) { f.obs.Context = &Context{Tokens: 199999, Window: 0} }},
			{"negative window", func(f *fixture) { f.obs.Context = &Context{Tokens: 199999, Window: -1} }},
			{"negative tokens", func(f *fixture) { f.obs.Context = &Context{Tokens: -1, Window: 1} }},
		},
		"11": {{"timestamp unreadable", func(f *fixture) { f.obs.Header.TimestampOK = false }}},
	}
	for _, g := range Ladder() {
		if g.Number == "after" {
			continue // decided by the store, after the copy
		}
		cases, ok := unreadable[g.Number]
		if g.Polarity == NoPolarity {
			if ok {
				t.Errorf("rung %s has unreadable-input cases but no polarity", g.Number)
			}
			continue
		}
		if !ok {
			t.Errorf("rung %s is %s but has no unreadable-input case", g.Number, g.Polarity)
			continue
		}
		for _, c := range cases {
			v := with(c.set).eval()
			want := Verdict{Resume: true, Reason: Resumed}
			if g.Polarity == FailsClosed {
				want = cold(g.Reason)
			}
			if v != want {
				t.Errorf("rung %s (%s), %s: got %+v, want %+v", g.Number, g.Polarity, c.name, v, want)
			}
		}
	}
}

// TestBoundsOffIgnoreInputs: with every bound off, the sidecar values of
// the bounds cannot change the verdict, however wrong they are.
func TestBoundsOffIgnoreInputs(t *testing.T) {
	garbage := []func(*fixture){
		func(f *fixture) { f.obs.ResumeChain = math.MaxUint64 },
		func(f *fixture) { f.obs.Context = &Context{Tokens: math.MaxInt64, Window: 1, Model: model} },
		func(f *fixture) { f.obs.Context = &Context{Tokens: -5, Window: -5} },
		func(f *fixture) { f.obs.Header.TimestampOK = false },
		func(f *fixture) { f.obs.Header.Timestamp = now.AddDate(-10, 0, 0) },
		func(f *fixture) { f.obs.Transcript.Size = math.MaxInt64 },
		func(f *fixture) { f.obs.LastPromotion = now.AddDate(-10, 0, 0) },
		func(f *fixture) { f.obs.Transcript.ModTime, f.obs.LastPromotion = time.Time{}, time.Time{} },
	}
	for _, off := range []Bounds{{}, {MaxBytes: -1, TTL: -day, MaxAge: -day, MaxContextPct: -80}} {
		for i, g := range garbage {
			f := with(g)
			f.b = off
			if v := f.eval(); v != (Verdict{Resume: true, Reason: Resumed}) {
				t.Errorf("bounds %+v, garbage %d: got %+v, want resumed", off, i, v)
			}
		}
		f := with(garbage...)
		f.b = off
		if v := f.eval(); !v.Resume {
			t.Errorf("bounds %+v, all garbage at once: got %+v, want resumed", off, v)
		}
	}
}

// tokenForm is a token's form, as the reasons table spells every one.
var tokenForm = regexp.MustCompile(`^[a-z][a-z0-9]*(-[a-z0-9]+)*$`)

func TestReasons(t *testing.T) {
	all := Reasons()
	if len(all) != 22 {
		t.Fatalf("Reasons() has %d tokens, want 22", len(all))
	}
	seen := map[Reason]bool{}
	for _, r := range all {
		if seen[r] {
			t.Errorf("token %q listed twice", r)
		}
		seen[r] = true
		if !r.Valid() {
			t.Errorf("%q not Valid", r)
		}
		if !tokenForm.MatchString(string(r)) || len(r) > MaxTokenBytes {
			t.Errorf("token %q has no token's form (lowercase words joined by hyphens)", r)
		}
	}
	for _, g := range Ladder() {
		if !seen[g.Reason] {
			t.Errorf("ladder row %s names %q, which Reasons() lacks", g.Number, g.Reason)
		}
	}
	all[0] = "mutated"
	if Reasons()[0] != Resumed {
		t.Error("Reasons() shares its backing array with the caller")
	}
	l := Ladder()
	l[0].Reason = "mutated"
	if Ladder()[0].Reason != Absent {
		t.Error("Ladder() shares its backing array with the caller")
	}
	for _, bad := range []Reason{"", "Resumed", "resumed ", "sessions-dir-unset", "no-key", "disabled"} {
		if bad.Valid() {
			t.Errorf("%q is Valid, want not", bad)
		}
	}
}

// ColdReasons are the ladder's reasons in its order, then the two the
// store decides before any rung is judged.
func TestColdReasons(t *testing.T) {
	cold := ColdReasons()
	var ladder []Reason // each rung's reason, at its first rung
	for _, g := range Ladder() {
		if !slices.Contains(ladder, g.Reason) {
			ladder = append(ladder, g.Reason)
		}
	}
	if !slices.Equal(cold[:len(ladder)], ladder) {
		t.Errorf("ColdReasons begins %q, want the ladder's %q", cold[:len(ladder)], ladder)
	}
	want := []Reason{Locked, StoreUnavailable}
	if got := cold[len(ladder):]; !slices.Equal(got, want) {
		t.Errorf("ColdReasons ends %q, want %q", got, want)
	}
	cold[0] = "mutated"
	if ColdReasons()[0] != Absent {
		t.Error("ColdReasons() shares its backing array with the caller")
	}
}

// A resolve's verdict is resumed, a cold start's reason, or a token a
// newer sessdb may have named; never a promote's outcome, and never a
// value with no token's form.
func TestIsResolveVerdict(t *testing.T) {
	resolves := map[Reason]bool{Resumed: true}
	for _, r := range ColdReasons() {
		resolves[r] = true
	}
	for _, r := range Reasons() {
		if got := r.IsResolveVerdict(); got != resolves[r] {
			t.Errorf("%q.IsResolveVerdict() = %v, want %v", r, got, resolves[r])
		}
	}
	longest := Reason(strings.Repeat("a", MaxTokenBytes))
	// docs/on-disk.md gives the bound as 64 bytes; every letter and digit
	// is a token's, z and 9 included, after the first byte too.
	sixtyFour := Reason(strings.Repeat("b", 64))
	for _, r := range []Reason{"some-newer-reason", "crc32c-differs", "x", longest, sixtyFour, "z", "zz-top-9", "a0123456789"} {
		if !r.IsResolveVerdict() {
			t.Errorf("%q, a token this binary does not know, is not a resolve's verdict", r)
		}
	}
	for _, r := range []Reason{
		"", longest + "a", sixtyFour + "b", "{absent", "~absent", "-absent", "absent-", "meta--unreadable", "Absent", "ABSENT",
		"absent ", " absent", "meta_unreadable", "9lives", "absent\n", "absent\x00", "abs\u00e9nt",
		"context-too-full\x1b[31m", "a/b",
	} {
		if r.IsResolveVerdict() {
			t.Errorf("%q is a resolve's verdict, want not (no token's form)", r)
		}
	}
}

func TestReasonPolarity(t *testing.T) {
	want := map[Reason]Polarity{
		MetaUnreadable: FailsClosed, VenueChanged: FailsClosed, PiVersionChanged: FailsClosed,
		ConversationTooOld: FailsClosed, TranscriptReplaced: FailsClosed, PromotionLost: FailsClosed,
		ResumeChainTooLong: FailsOpen, ContextTooFull: FailsOpen,
	}
	for _, r := range Reasons() {
		if got := r.Polarity(); got != want[r] {
			t.Errorf("%s.Polarity() = %q, want %q", r, got, want[r])
		}
	}
	if got := fmt.Sprint(FailsClosed, FailsOpen, NoPolarity); got != "closed open " {
		t.Errorf("polarity words: %q", got)
	}
}

// TestDocTableFollowsLadder keeps the table in the package doc honest: one
// line per Ladder row, in order, with the row's reason and polarity.
func TestDocTableFollowsLadder(t *testing.T) {
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	var rows [][]string
	for _, line := range strings.Split(string(src), "\n") {
		if f := strings.Fields(strings.TrimPrefix(line, "//\t")); strings.HasPrefix(line, "//\t") && len(f) >= 2 {
			rows = append(rows, f)
		}
	}
	l := Ladder()
	if len(rows) < 2 || rows[0][0] != "#" {
		t.Fatalf("no table found in doc.go")
	}
	rows = rows[1:] // header
	if len(rows) != len(l)+1 {
		t.Fatalf("doc table has %d rows, Ladder() %d plus ok", len(rows), len(l))
	}
	for i, g := range l {
		r := rows[i]
		if r[0] != g.Number || Reason(r[1]) != g.Reason || g.Polarity != NoPolarity && r[2] != g.Polarity.String() {
			t.Errorf("doc row %q, Ladder row %s %s %s", strings.Join(r, " "), g.Number, g.Reason, g.Polarity)
		}
	}
	if last := rows[len(rows)-1]; last[0] != "ok" || Reason(last[1]) != Resumed {
		t.Errorf("doc table ends %q, want ok resumed", last)
	}
}
