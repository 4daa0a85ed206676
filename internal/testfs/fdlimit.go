// FreeBSD's unix.Rlimit holds int64s where Linux's and macOS's hold
// uint64s; the tests that starve a process of descriptors run on these two.

//go:build !freebsd

package testfs

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// LowerFDLimit lets the process open extra more descriptors
// (RLIMIT_NOFILE bounds a descriptor's number, and an open takes the
// lowest free one) and returns the function that restores the limit; the
// test's cleanup calls it too. It skips the test where the limit cannot
// be lowered. restore reports whether the starvation held: a descriptor
// below the lowest free one at the lowering, closed meanwhile by
// something else (the GC finalizing an *os.File a test dropped, a
// goroutine), lets an open the test meant to starve succeed. restore
// looks for one, the limit still low, before it raises the limit; the
// caller then runs its step again (Starved does).
func LowerFDLimit(tb testing.TB, extra uint64) (restore func() (held bool)) {
	tb.Helper()
	f, err := os.Open(os.DevNull)
	if err != nil {
		tb.Fatal(err)
	}
	lowest := uint64(f.Fd())
	f.Close()
	var old unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &old); err != nil {
		tb.Fatal(err)
	}
	low := old
	low.Cur = lowest + extra
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &low); err != nil {
		tb.Skipf("setrlimit: %v", err)
	}
	done := false
	restore = func() bool {
		if done {
			return true
		}
		done = true
		held := !FreedBelow(lowest, extra)
		if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &old); err != nil {
			tb.Error(err)
		}
		return held
	}
	tb.Cleanup(func() { restore() })
	return restore
}

// FreedBelow reports whether a descriptor numbered below lowest is free,
// the limit being at lowest+extra: it opens what the limit allows and
// closes it again.
func FreedBelow(lowest, extra uint64) bool {
	freed := false
	var probes []int
	for i := uint64(0); i <= extra; i++ {
		fd, err := unix.Open(os.DevNull, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			break
		}
		probes = append(probes, fd)
		if uint64(fd) < lowest {
			freed = true
		}
	}
	for _, fd := range probes {
		unix.Close(fd)
	}
	return freed
}

// Starved runs step with no descriptor left to open (LowerFDLimit's
// extra 0), again if a descriptor was freed meanwhile (at most 5 tries),
// so that its results are those of a starved run.
func Starved(tb testing.TB, step func()) {
	tb.Helper()
	for try := 1; ; try++ {
		restore := LowerFDLimit(tb, 0)
		step()
		if restore() || try == 5 {
			return
		}
		tb.Logf("try %d: a descriptor below the limit was freed meanwhile; the starved step runs again", try)
	}
}
