package etcdmeta

import (
	"math"
	"testing"
)

// Holds decides by the whole entry that a write sent more than once (a
// hedge's other try, a try whose answer was lost) landed: a refusal is
// then recorded once, a commit is reported promoted. That holds only if
// every entry a writer sends comes back from its encoding equal, field
// for field: a string that is not UTF-8 (a job id or reason is the
// caller's bytes), zero values of the omitempty fields, the extremes of
// every number, a time before 1970. An entry that came back changed
// would be a landed write not recognised: a second refusal appended, or
// a promotion reported failed and run again.
func TestHoldsRecognisesEveryEntryAsItWasEncoded(t *testing.T) {
	entries := []HistoryEntry{
		{},
		{Seq: 7, Gen: 1, At: 1},
		{Gen: math.MaxUint64, At: math.MaxInt64, Bytes: math.MaxInt64, Chain: math.MaxUint64, BaseGen: math.MaxUint64, CRC32C: math.MaxUint64},
		{At: math.MinInt64, Bytes: math.MinInt64},
		{At: -1, Bytes: -1, Gen: 1 << 32, Chain: 1<<31 - 1},
		{Job: "\xff\xfe not utf-8 \xc0\x80", Reason: "\xed\xa0\x80", Ticket: "t\x00nul", Outcome: "superseded", Run: "\x1b[31m"},
		{Job: "é", Reason: "absent", Ticket: "", Outcome: "", Run: "", Resumed: true, TornTail: true, Rewritten: true},
		{Job: string(make([]byte, 300)), Reason: " ", Ticket: "0123456789abcdef", Outcome: "transcript-rewritten", Run: "answered", BaseGen: 0, CRC32C: 0},
	}
	for i, e := range entries {
		b, err := encodeHistory(e)
		if err != nil {
			t.Fatalf("entry %d: encode: %v", i, err)
		}
		got, err := decodeHistory(42, b)
		if err != nil {
			t.Fatalf("entry %d: decode: %v", i, err)
		}
		if !Holds([]HistoryEntry{got}, e) {
			t.Errorf("entry %d: %+v came back %+v: a landed write of it is not recognised", i, e, got)
		}
		// And no other entry's: one field apart is another write.
		other := e
		other.At++
		if Holds([]HistoryEntry{got}, other) {
			t.Errorf("entry %d: taken for an entry one nanosecond apart", i)
		}
	}
}
