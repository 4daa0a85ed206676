package main

import (
	"math"
	"testing"
	"time"
)

// dump's ages of a transcript's mtime: tmpfs keeps any 64-bit mtime it is
// given, and time.Unix wraps a second count near either end of int64 to the
// other end. One at 2^63-1 s is ahead; one at -2^63 s is (1795946400 +
// 2^63) / 86400 days ago by Python's integers. Before (store.RoundAge's
// seconds overflowing, ago's t.After fooled by the wrap), both were
// "-106751991146514d ago".
func TestAgoOfAnMtimeAtEitherEndOf64Bits(t *testing.T) {
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		then time.Time
		want string
	}{
		{time.Unix(math.MaxInt64, 0), "ahead"},
		{time.Unix(math.MinInt64, 0), "106751991188087d ago"},
		{now.Add(time.Second), "ahead"},
		{now.Add(-3 * time.Minute), "3m ago"},
	} {
		if got := ago(now, c.then); got != c.want {
			t.Errorf("ago(%d s) = %q, want %q", c.then.Unix(), got, c.want)
		}
	}
}
