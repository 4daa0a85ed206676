package db

import (
	"math"
	"time"
)

// RecordedAt is t as meta.db records a time, in Unix nanoseconds, held
// within what those hold (an int64: the years 1678 to 2262). A time past
// 2262 (the host's clock gone wrong, or an mtime set so) is recorded as
// the last time meta.db holds, still in the future as t was, where
// UnixNano would wrap it into the past (a promotion expired, and reaped,
// once the clock is right; a file created in 1715); one before 1678 as the
// first. Every time written into meta.db goes through it
// (Transcript.PromotedAt, HistoryEntry.At, meta/created: the store's
// promotions, accepts and history, a migration's legacy mtime, a new
// file's creation).
func RecordedAt(t time.Time) int64 {
	switch {
	case t.After(time.Unix(0, math.MaxInt64)):
		return math.MaxInt64
	case t.Before(time.Unix(0, math.MinInt64)):
		return math.MinInt64
	}
	return t.UnixNano()
}
