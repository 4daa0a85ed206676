package fleet

import (
	"testing"
	"time"

	"sessdb/fleet/etcdmeta"
)

// A file above the record's generation goes by the date since which no
// record named it only where the history was read with the record judged:
// a history of another revision (the record moved on, or was removed and
// promoted anew, between the two reads) may date it days before, and the
// record's own date judges it instead, as a superseded generation's is.
// And that date is a limit as the record's is: named exactly the grace
// period ago, the file goes; a nanosecond later, it is kept.
func TestNeedsJudgesAFileAboveTheRecordByTheHistoryReadWithIt(t *testing.T) {
	const key = "0123456789abcdef0123456789abcdef"
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	cut, inFlight := now.Add(-time.Hour), now.Add(-2*time.Minute)
	old, ancient := now.Add(-30*time.Minute), now.Add(-3*time.Hour)
	file := func(g uint64) string {
		return key + "/000000000000000" + string(rune('0'+g)) + "-aaaaaaaaaaaaaaaa.jsonl"
	}
	at3 := func(promoted time.Time) etcdmeta.Item {
		return etcdmeta.Item{Key: key, Rev: 7, Record: etcdmeta.Record{Transcript: &etcdmeta.Transcript{Gen: 3, File: file(3), PromotedAt: promoted.UnixNano()}}}
	}
	entries := []etcdmeta.HistoryEntry{{Gen: 1, At: ancient.UnixNano()}, {Gen: 2, At: ancient.Add(time.Minute).UnixNano()}, {Gen: 3, At: old.UnixNano()}}
	// The record's promotion alone (the ring trimmed the rest).
	only := func(at time.Time) history {
		return history{entries: []etcdmeta.HistoryEntry{{Gen: 3, At: at.UnixNano()}}, rev: 7}
	}
	for _, c := range []struct {
		name string
		it   etcdmeta.Item
		file string
		hist history
		want bool
	}{
		{"gen 4, a history of another revision dating it 3 h ago: the record's date", at3(old), file(4), history{entries: entries, rev: 6}, true},
		{"gen 4, the history read with the record dating it 3 h ago", at3(old), file(4), history{entries: entries, rev: 7}, false},
		{"gen 4, unnamed since exactly the grace period ago", at3(cut), file(4), only(cut), false},
		{"gen 4, unnamed since a nanosecond within the grace period", at3(cut.Add(time.Nanosecond)), file(4), only(cut.Add(time.Nanosecond)), true},
		{"gen 2, superseded exactly the grace period ago", at3(cut), file(2), only(cut), false},
		{"gen 2, superseded a nanosecond within the grace period", at3(cut.Add(time.Nanosecond)), file(2), only(cut.Add(time.Nanosecond)), true},
	} {
		if got := needs(c.it, true, c.file, ancient, cut, inFlight, c.hist); got != c.want {
			t.Errorf("%s: needs = %v, want %v", c.name, got, c.want)
		}
	}
}
