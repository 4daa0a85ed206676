package engage

import (
	"fmt"
	"testing"
)

// The whole transition table: every carried state, every kind of reading
// relative to the threshold, every event. Each row names the rule of Step's
// doc (and of ADR 0018) that decides it.
func TestStepTable(t *testing.T) {
	const th = 1000
	var (
		unknown     = Reading{}
		unknownHigh = Reading{Tokens: 5000} // a stale number pi would report as null
		below       = Known(999)
		equal       = Known(1000)
		above       = Known(1001)
	)
	rows := []struct {
		prev State
		r    Reading
		ev   Event
		want State
		rule string
	}{
		{Raw, above, None, Engaged, "1: crossing engages"},
		{Raw, above, Start, Engaged, "1: crossing wins over a session start"},
		{Raw, above, Compaction, Engaged, "1: crossing wins over a compaction"},
		{Engaged, above, None, Engaged, "1: crossing keeps engaged"},
		{Engaged, above, Start, Engaged, "1: crossing wins over a session start"},
		{Engaged, above, Compaction, Engaged, "1: still above after a compaction re-engages at once"},

		{Raw, equal, None, Raw, "strict >: equal does not cross; 3: carried"},
		{Engaged, equal, None, Engaged, "strict >: equal does not cross; 3: carried"},
		{Raw, equal, Start, Raw, "strict >; 2: reset disengages"},
		{Engaged, equal, Start, Raw, "strict >; 2: reset disengages"},
		{Raw, equal, Compaction, Raw, "strict >; 2: reset disengages"},
		{Engaged, equal, Compaction, Raw, "strict >; 2: reset disengages"},

		{Raw, below, None, Raw, "3: carried"},
		{Engaged, below, None, Engaged, "3: sticky, the pruned usage below the threshold does not disengage"},
		{Raw, below, Start, Raw, "2: reset"},
		{Engaged, below, Start, Raw, "2: a session start disengages"},
		{Raw, below, Compaction, Raw, "2: reset"},
		{Engaged, below, Compaction, Raw, "2: a compaction that ran disengages"},

		{Raw, unknown, None, Raw, "unknown never crosses; 3: carried"},
		{Engaged, unknown, None, Engaged, "unknown never crosses; 3: carried"},
		{Raw, unknown, Start, Raw, "unknown never crosses; 2: reset"},
		{Engaged, unknown, Start, Raw, "unknown never crosses; 2: reset"},
		{Raw, unknown, Compaction, Raw, "unknown never crosses; 2: reset"},
		{Engaged, unknown, Compaction, Raw, "unknown after a compaction: the stale usage does not re-engage"},

		{Raw, unknownHigh, None, Raw, "unknown never crosses, whatever its number"},
		{Engaged, unknownHigh, Compaction, Raw, "unknown never crosses, whatever its number"},
	}
	for _, r := range rows {
		if got := Step(r.prev, r.r, th, r.ev); got != r.want {
			t.Errorf("Step(%v, %v, %d, %v) = %v, want %v (rule %s)", r.prev, r.r, th, r.ev, got, r.want, r.rule)
		}
	}
	// The rows cover the product of states, reading classes and events.
	seen := map[string]bool{}
	for _, r := range rows {
		seen[fmt.Sprint(r.prev, r.r.Known, r.r.Tokens > th, r.r.Tokens == th, r.ev)] = true
	}
	if len(seen) < 2*4*3 {
		t.Errorf("the table covers %d combinations, want all %d", len(seen), 2*4*3)
	}
}

// The extension's own test (pi.md 5.3): window 199680, reserve 16384; a raw
// estimate of 184000 and a pruned one of 141000 alternate
// RAW, PRUNED, PRUNED, RAW, PRUNED, PRUNED, and the session stays engaged
// throughout, where the stateless check flaps.
func TestStepStaysEngagedThroughAlternation(t *testing.T) {
	th := Threshold(199680, 16384)
	if th != 183296 {
		t.Fatalf("threshold %d, want 183296", th)
	}
	s := Raw
	var stateless []State
	for i, est := range []int64{184000, 141000, 141000, 184000, 141000, 141000} {
		s = Step(s, Known(est), th, None)
		if s != Engaged {
			t.Fatalf("request %d (estimate %d): %v, want engaged", i+1, est, s)
		}
		stateless = append(stateless, Stateless(Known(est), th))
	}
	if fmt.Sprint(stateless) != "[engaged raw raw engaged raw raw]" {
		t.Errorf("stateless = %v: the check sticky engagement fixes should flap", stateless)
	}
}

func TestStrings(t *testing.T) {
	for v, want := range map[fmt.Stringer]string{
		Raw: "raw", Engaged: "engaged", State(9): "State(9)",
		None: "none", Start: "start", Compaction: "compaction", Event(7): "Event(7)",
		Reading{}: "unknown", Known(42): "42",
	} {
		if got := v.String(); got != want {
			t.Errorf("%#v.String() = %q, want %q", v, got, want)
		}
	}
}
