package store

import (
	"testing"
	"time"

	"sessdb/gates"
)

// A key that misses a rung before the venue rung misses it for every job,
// so Judge without a job names that rung, with nothing a job could change
// (no needs), as a resolve by any job would; a key that reaches the venue
// rung is undetermined until a job is named.
func TestJudgeWithoutAJobNamesEveryJobsVerdict(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	whole := gates.Transcript{Exists: true, Regular: true, Size: 100, ModTime: now}
	resumable := gates.Observation{Transcript: whole, LastPromotion: now,
		Venue: gates.Stamp{State: gates.StampPresent, Value: "local"}, PiVersion: gates.Stamp{State: gates.StampPresent, Value: "0.58.3"},
		Header: gates.Header{IsSession: true, Timestamp: now, TimestampOK: true}}
	bounds := gates.Bounds{MaxBytes: 1000, TTL: time.Hour}
	for _, c := range []struct {
		reason gates.Reason
		edit   func(*gates.Observation)
	}{
		{gates.Absent, func(o *gates.Observation) { o.Transcript = gates.Transcript{} }},
		{gates.NotARegularFile, func(o *gates.Observation) { o.Transcript.Regular = false }},
		{gates.TooLarge, func(o *gates.Observation) { o.Transcript.Size = 1001 }},
		{gates.MetaUnreadable, func(o *gates.Observation) { o.MetaUnreadable = true }},
		{gates.MetaMovedAside, func(o *gates.Observation) { o.MetaMovedAside = true }},
		{gates.Expired, func(o *gates.Observation) { o.LastPromotion = now.Add(-2 * time.Hour) }},
	} {
		obs := resumable
		c.edit(&obs)
		got := Judge(obs, bounds, nil, now, "")
		if got.Reason != string(c.reason) || got.Needs != nil || got.IfMatched != "" {
			t.Errorf("%s: Judge without a job = %+v, want %s for every job", c.reason, got, c.reason)
		}
		if v := gates.Evaluate(obs, bounds, gates.Job{Venue: "podman", PiVersion: "0.1.0"}, now); v.Reason != c.reason {
			t.Errorf("%s: another job's verdict is %s", c.reason, v.Reason)
		}
	}
	if got := Judge(resumable, bounds, nil, now, ""); got.Reason != Undetermined || got.IfMatched != string(gates.Resumed) {
		t.Errorf("a resumable key: Judge without a job = %+v, want undetermined, resumed if matched", got)
	}
}
