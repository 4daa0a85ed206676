package fleet

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"sessdb/gates"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// dumpOne is Inspect's report of key alone, with o.
func (f *fixture) dumpOne(key string, o InspectOptions) Report {
	f.t.Helper()
	o.Only = key
	var got []Report
	if err := f.b.Inspect(f.t.Context(), o, func(r Report) error {
		got = append(got, r)
		return nil
	}); err != nil || len(got) != 1 {
		f.t.Fatalf("dump of %s: %+v, %v; want one report", key, got, err)
	}
	return got[0]
}

// dump --verify of a generation changed in place, its size kept and its
// bytes not (a CRC32C the record does not hold), judges the key as the
// resolve's copy would: transcript-replaced. Before (mutant i09 of the
// fleet sweep's list, `mismatch || k.Verify.Result == VerifyMismatch` ->
// `&&`), no test verified a file of the recorded size with other bytes:
// the mutant's verdict resumed it, a verify mismatch in its own report.
func TestADumpVerifyOfAFileChangedInPlaceIsTranscriptReplaced(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	key := store.Key("github", "inspect-verify", "changed")
	f.run(key, "one")
	p := filepath.Join(f.dir, f.recordFile(key))
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-2] ^= 1 // inside the last line, the size kept
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	r := f.dumpOne(key, InspectOptions{Verify: true, Job: &testJob})
	if r.Verify == nil || r.Verify.Result != store.VerifyMismatch || r.Verdict == nil || r.Verdict.Reason != string(gates.TranscriptReplaced) {
		t.Fatalf("dump --verify of a file changed in place: verify %+v, verdict %+v; want a mismatch, transcript-replaced", r.Verify, r.Verdict)
	}
	if sess, _ := resolveOn(t, f.s, key); sess.Reason != gates.TranscriptReplaced {
		t.Fatalf("resolve of it: %s; want transcript-replaced", sess.Reason)
	}
}

// A context reading is over its window only above it (docs/json.md,
// over_window: "above its window"), as a sessions root's dump says: a
// reading of exactly its window is not. Before (mutant i12 of the fleet
// sweep's list, `tokens > window` -> `>=`), no fleet test read
// over_window at the window: the mutant flagged it.
func TestADumpsContextIsOverItsWindowOnlyAboveIt(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	for _, tc := range []struct {
		tokens int64
		over   bool
	}{{200000, false}, {200001, true}} {
		key := store.Key("github", "inspect-window", string(rune('a'+tc.tokens%2)))
		sess, _ := f.job(key, "one")
		if res, err := f.s.Promote(sess, store.PromoteRequest{PiVersion: testJob.PiVersion, Tokens: ptrTo(tc.tokens), Window: 200000}); err != nil || !res.Promoted {
			t.Fatalf("promote: %+v, %v", res, err)
		}
		r := f.dumpOne(key, InspectOptions{})
		if r.Context == nil || r.Context.Tokens != tc.tokens || r.Context.OverWindow != tc.over {
			t.Errorf("dump's context of %d tokens of 200000: %+v; want over_window %v", tc.tokens, r.Context, tc.over)
		}
	}
}

// A reading too large for tokens×100 to fit in 64 bits is reported
// without a percent rather than with a wrong one (the context rung
// compares it in 128 bits, gates.contextTooFull): a dump never shows a
// percent the rung does not compare. Before (mutant i13 of the fleet
// sweep's list, the bound `tokens <= (1<<63-1)/100` widened to every
// int64), no test dumped such a reading: the mutant's tokens×100
// overflowed, and 2^62 tokens of a 2^61 window read "pct 0".
func TestADumpsContextPercentNeverOverflows(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	key := store.Key("github", "inspect-window", "huge")
	sess, _ := f.job(key, "one")
	if res, err := f.s.Promote(sess, store.PromoteRequest{PiVersion: testJob.PiVersion, Tokens: ptrTo(int64(1) << 62), Window: 1 << 61}); err != nil || !res.Promoted {
		t.Fatalf("promote: %+v, %v", res, err)
	}
	r := f.dumpOne(key, InspectOptions{})
	if r.Context == nil || !r.Context.OverWindow || r.Context.Pct != nil && *r.Context.Pct != 200 {
		pct := "none"
		if r.Context != nil && r.Context.Pct != nil {
			pct = fmt.Sprint(*r.Context.Pct)
		}
		t.Fatalf("dump's context of 2^62 tokens of 2^61: %+v, pct %s; want over its window, the percent 200 or none", r.Context, pct)
	}
}
