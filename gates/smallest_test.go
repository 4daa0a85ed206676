package gates

import "testing"

// Bounds says only zero (or a negative value) switches a rung off, so the
// smallest positive bound is a bound like any other: one byte, one
// nanosecond. And a reading's window is a measurement whenever it is
// positive (Context: a Window <= 0 is no measurement), a window of one
// token included.
func TestTheSmallestBoundIsABound(t *testing.T) {
	caseTable{
		{"1-byte cap, 1 byte", func(f *fixture) { f.b.MaxBytes, f.obs.Transcript.Size = 1, 1 }, Resumed},
		{"1-byte cap, 2 bytes", func(f *fixture) { f.b.MaxBytes, f.obs.Transcript.Size = 1, 2 }, TooLarge},
		{"1ns TTL, 1ns ago", func(f *fixture) { f.b.TTL, f.obs.LastPromotion = 1, now.Add(-1) }, Resumed},
		{"1ns TTL, 2ns ago", func(f *fixture) { f.b.TTL, f.obs.LastPromotion = 1, now.Add(-2) }, Expired},
		{"1ns max age, 1ns old", func(f *fixture) { f.b.MaxAge, f.obs.Header.Timestamp = 1, now.Add(-1) }, Resumed},
		{"1ns max age, 2ns old", func(f *fixture) { f.b.MaxAge, f.obs.Header.Timestamp = 1, now.Add(-2) }, ConversationTooOld},
		{"window of 1, empty", func(f *fixture) { f.obs.Context, f.b.MaxContextPct = &Context{Tokens: 0, Window: 1, Model: model}, 100 }, Resumed},
		{"window of 1, full", func(f *fixture) { f.obs.Context, f.b.MaxContextPct = &Context{Tokens: 1, Window: 1, Model: model}, 100 }, ContextTooFull},
	}.run(t)
}
