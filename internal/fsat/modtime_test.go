package fsat

import (
	"io/fs"
	"math"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/internal/testfs"
)

// ModTime holds any mtime a file system can give on the side of now it
// is on: time.Unix wraps a second count near 2^63 to the far past, so
// before, an mtime of 2^63-1 s (tmpfs keeps it) was before 1970.
func TestModTimeOfAnyMtimeIsOnItsSideOfNow(t *testing.T) {
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		sec, nsec int64
		after     bool
	}{
		{math.MaxInt64, 999999999, true},
		{math.MaxInt64 - 62135596800, 0, true},
		{math.MaxInt64 - 62135596800 + 1, 0, true},
		{math.MinInt64, 0, false},
		{-1, 5, false},
	} {
		var st unix.Stat_t
		if !testfs.SetTimeField(&st.Mtim.Sec, c.sec) || !testfs.SetTimeField(&st.Mtim.Nsec, c.nsec) {
			t.Logf("%d s %d ns: this platform's time_t cannot hold it", c.sec, c.nsec)
			continue
		}
		if got := ModTime(&st); got.After(now) != c.after {
			t.Errorf("ModTime of %d s %d ns = %v: after %v, want %v", c.sec, c.nsec, got, got.After(now), c.after)
		}
	}
	// A time it holds is kept to the nanosecond.
	var st unix.Stat_t
	testfs.SetTimeField(&st.Mtim.Sec, 1795946400)
	testfs.SetTimeField(&st.Mtim.Nsec, 123456789)
	if got := ModTime(&st); !got.Equal(time.Unix(1795946400, 123456789)) {
		t.Errorf("ModTime = %v, want 2026-11-29T10:00:00.123456789Z", got)
	}
}

// infoAt is a FileInfo whose ModTime is what os.File.Stat makes of a
// second count: time.Unix of it.
type infoAt struct {
	fs.FileInfo
	sec, nsec int64
}

func (i infoAt) ModTime() time.Time { return time.Unix(i.sec, i.nsec) }

// InfoModTime, for the reads that have an os.FileInfo (the fleet's
// resolve and dump fstat the generation they opened), holds an mtime as
// ModTime does: before, they took fs.FileInfo's, wrapped to the far past.
func TestInfoModTimeOfAnyMtimeIsOnItsSideOfNow(t *testing.T) {
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		sec, nsec int64
		after     bool
	}{
		{math.MaxInt64, 999999999, true},
		{math.MaxInt64 - 62135596800 + 1, 0, true},
		{math.MaxInt64 - 62135596800, 0, true},
		{math.MinInt64, 0, false},
		{-1, 5, false},
	} {
		if got := InfoModTime(infoAt{sec: c.sec, nsec: c.nsec}); got.After(now) != c.after {
			t.Errorf("InfoModTime of %d s %d ns = %v: after %v, want %v", c.sec, c.nsec, got, got.After(now), c.after)
		}
	}
	if got := InfoModTime(infoAt{sec: 1795946400, nsec: 123456789}); !got.Equal(time.Unix(1795946400, 123456789)) {
		t.Errorf("InfoModTime = %v, want 2026-11-29T10:00:00.123456789Z", got)
	}
}

// A time a 32-bit time_t cannot hold is set to the nearest it holds, on
// its side of 1970, not wrapped round to the other (a transcript dated
// past 2038 set in 1901 would be expired); a 64-bit one holds it as is.
func TestSetMtimeClampsWhereTimeTHas32Bits(t *testing.T) {
	for _, c := range []struct {
		v, want32 int64
	}{
		{5, 5},
		{-5, -5},
		{math.MaxInt32, math.MaxInt32},
		{math.MaxInt32 + 1, math.MaxInt32},
		{1 << 40, math.MaxInt32},
		{math.MinInt32, math.MinInt32},
		{math.MinInt32 - 1, math.MinInt32},
		{-1 << 40, math.MinInt32},
	} {
		var narrow int32
		var wide int64
		setClamped(&narrow, c.v)
		setClamped(&wide, c.v)
		if int64(narrow) != c.want32 || wide != c.v {
			t.Errorf("%d: set as %d in 32 bits, %d in 64; want %d and %d", c.v, narrow, wide, c.want32, c.v)
		}
	}
}
