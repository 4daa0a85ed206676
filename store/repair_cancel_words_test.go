package store

import (
	"context"
	"strings"
	"testing"
)

// check --repair, and --repair --accept KEY, interrupted as the
// roll-forward reads a committed promotion's temp say on the finding (and
// so on stderr, where the CLI names a repair not done) that the check was
// interrupted, that nothing was renamed, and what to run again. They said
// "not repaired: roll forward .current.jsonl.tmp-…: context canceled", the
// words of a roll-forward that failed, Go's error for the operator's
// Ctrl-C; an accept's said "not repaired" of an accept.
func TestARepairInterruptedAtItsRollForwardSaysSo(t *testing.T) {
	for _, accept := range []bool{false, true} {
		s, _, _ := committedTemp(t)
		ctx, cancel := context.WithCancel(context.Background())
		reads := cancelAtRollForwardRead(t, cancel)
		opts := CheckOptions{Repair: true}
		if accept {
			opts.Accept = testKey
		}
		var found []Finding
		s.Check(ctx, opts, func(f Finding) error { found = append(found, f); return nil })
		cancel()
		want := map[Kind]string{KindPendingPromotion: "run check --repair again"}
		if accept {
			want[KindAccepted] = "run check --repair --accept " + testKey + " again"
		}
		if *reads == 0 {
			t.Fatalf("accept %v: the roll-forward read no temp", accept)
		}
		for _, f := range found {
			again, ok := want[f.Kind]
			if !ok {
				continue
			}
			delete(want, f.Kind)
			if !f.RepairFailed || !strings.Contains(f.Repair, "check interrupted (context canceled)") || !strings.Contains(f.Repair, "nothing renamed") || !strings.Contains(f.Repair, again) {
				t.Errorf("accept %v: %s: %q; want it to say the check was interrupted, nothing renamed, and %q", accept, f.Kind, f.Repair, again)
			}
		}
		if len(want) != 0 {
			t.Errorf("accept %v: no finding of %v", accept, want)
		}
	}
}
