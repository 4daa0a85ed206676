package fleet

import (
	"errors"
	"testing"
	"time"

	"sessdb/fleet/etcdmeta"
)

// needs keeps what a record names or may yet name, and what a resolve may
// still copy; everything else goes by its age. Each rule alone:
func TestNeeds(t *testing.T) {
	const key = "0123456789abcdef0123456789abcdef"
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	cut, inFlight := now.Add(-time.Hour), now.Add(-2*time.Minute) // grace 1h, in-flight window 2m
	young, old, ancient := now.Add(-time.Minute), now.Add(-30*time.Minute), now.Add(-3*time.Hour)
	gen := func(g uint64) string {
		return key + "/" + []string{"", "0000000000000001-aaaaaaaaaaaaaaaa.jsonl", "0000000000000002-bbbbbbbbbbbbbbbb.jsonl", "0000000000000003-cccccccccccccccc.jsonl"}[g]
	}
	temp := key + "/.tmp-dddddddddddddddd"
	at2 := func(promoted time.Time) etcdmeta.Item {
		return etcdmeta.Item{Key: key, Record: etcdmeta.Record{Transcript: &etcdmeta.Transcript{Gen: 2, File: gen(2), PromotedAt: promoted.UnixNano()}}}
	}
	for _, c := range []struct {
		name  string
		it    etcdmeta.Item
		ok    bool
		file  string
		mtime time.Time
		want  bool
	}{
		{"an unreadable record's file", etcdmeta.Item{Key: key, Err: errors.New("damaged")}, true, gen(1), ancient, true},
		{"the record's own file", at2(ancient), true, gen(2), ancient, true},
		{"a generation above the record, in flight", at2(ancient), true, gen(3), young, true},
		{"a generation above the record, past the in-flight window", at2(ancient), true, gen(3), old, false},
		{"a temp, in flight", at2(ancient), true, temp, young, true},
		{"a temp past the in-flight window", at2(ancient), true, temp, old, false},
		{"a key with no record, in flight", etcdmeta.Item{}, false, gen(1), young, true},
		{"a key with no record, past the window", etcdmeta.Item{}, false, gen(1), old, false},
		{"a superseded generation, its successor within the grace", at2(old), true, gen(1), ancient, true},
		{"a superseded generation, its successor past the grace", at2(ancient), true, gen(1), ancient, false},
		{"a superseded generation, young, its successor past the grace", at2(ancient), true, gen(1), young, false},
		{"a record without a transcript keeps every file", etcdmeta.Item{Key: key, Rev: 5}, true, gen(1), ancient, true},
	} {
		if got := needs(c.it, c.ok, c.file, c.mtime, cut, inFlight, history{}); got != c.want {
			t.Errorf("%s: needs = %v, want %v", c.name, got, c.want)
		}
	}
}

// A generation below the record's goes by when the history says it was
// superseded, not by the record's newest date; the listing's snapshot,
// which reads no history, leaves it to the look that does; a history read
// with another revision of the record than the one judged is not taken.
func TestNeedsJudgesASupersededGenerationByItsHistory(t *testing.T) {
	const key = "0123456789abcdef0123456789abcdef"
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	cut, inFlight := now.Add(-time.Hour), now.Add(-2*time.Minute)
	old, ancient := now.Add(-30*time.Minute), now.Add(-3*time.Hour)
	file := func(g uint64) string {
		return key + "/000000000000000" + string(rune('0'+g)) + "-aaaaaaaaaaaaaaaa.jsonl"
	}
	it := etcdmeta.Item{Key: key, Rev: 7, Record: etcdmeta.Record{Transcript: &etcdmeta.Transcript{Gen: 3, File: file(3), PromotedAt: old.UnixNano()}}}
	entries := []etcdmeta.HistoryEntry{{Gen: 1, At: ancient.UnixNano()}, {Gen: 2, At: ancient.Add(time.Minute).UnixNano()}, {Gen: 3, At: old.UnixNano()}, {Gen: 9, At: ancient.UnixNano()}}
	read := history{entries: entries, rev: 7}
	for _, c := range []struct {
		name string
		file string
		hist history
		want bool
	}{
		{"gen 1, superseded by gen 2 3 h ago", file(1), read, false},
		{"gen 2, superseded by gen 3 30 min ago", file(2), read, true},
		{"gen 3 not the record's: its date", key + "/0000000000000003-bbbbbbbbbbbbbbbb.jsonl", read, true},
		{"gen 4, above the record: its date, not gen 9's entry", file(4), read, true},
		{"gen 1, in the snapshot: judged again", file(1), unreadHistory, false},
		{"gen 1, a history of another revision: the record's date", file(1), history{entries: entries, rev: 6}, true},
		{"gen 1, no history: the record's date", file(1), history{rev: 7}, true},
	} {
		if got := needs(it, true, c.file, ancient, cut, inFlight, c.hist); got != c.want {
			t.Errorf("%s: needs = %v, want %v", c.name, got, c.want)
		}
	}
}
