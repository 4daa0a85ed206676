// FreeBSD's syscall.Rlimit holds int64s where Linux's and macOS's hold
// uint64s; the promise is the same there, and tested on these two.

//go:build !freebsd

package store

import (
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"sessdb/gates"
	"sessdb/internal/faults"
	"sessdb/internal/fsat"
)

// lowerFDLimit lets the process open extra more descriptors (RLIMIT_NOFILE
// bounds a descriptor's number, and an open takes the lowest free one) and
// returns the function that restores the limit; the test's cleanup calls
// it too. restore reports whether the starvation held: a descriptor below
// the lowest free one at the lowering, closed meanwhile by something else
// (the GC finalizing an *os.File a test dropped, a goroutine), lets an
// open the test meant to starve succeed. restore looks for one, the limit
// still low, before it raises the limit; the caller then runs its step
// again (starved does).
func lowerFDLimit(t *testing.T, extra uint64) (restore func() (held bool)) {
	t.Helper()
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	lowest := uint64(f.Fd())
	f.Close()
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	low := old
	low.Cur = lowest + extra
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Skipf("setrlimit: %v", err)
	}
	done := false
	restore = func() bool {
		if done {
			return true
		}
		done = true
		held := !freedBelow(lowest, extra)
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
			t.Error(err)
		}
		return held
	}
	t.Cleanup(func() { restore() })
	return restore
}

// freedBelow reports whether a descriptor numbered below lowest is free,
// the limit being at lowest+extra: it opens what the limit allows and
// closes it again.
func freedBelow(lowest, extra uint64) bool {
	freed := false
	var probes []int
	for i := uint64(0); i <= extra; i++ {
		fd, err := syscall.Open(os.DevNull, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != nil {
			break
		}
		probes = append(probes, fd)
		if uint64(fd) < lowest {
			freed = true
		}
	}
	for _, fd := range probes {
		syscall.Close(fd)
	}
	return freed
}

// starved runs step with no descriptor left to open (lowerFDLimit's
// extra 0), again if a descriptor was freed meanwhile (at most 5 tries),
// so that its results are those of a starved run.
func starved(t *testing.T, step func()) {
	t.Helper()
	for try := 1; ; try++ {
		restore := lowerFDLimit(t, 0)
		step()
		if restore() || try == 5 {
			return
		}
		t.Logf("try %d: a descriptor below the limit was freed meanwhile; the starved step runs again", try)
	}
}

// A legacy key's sidecar that could not be opened for want of a
// descriptor (EMFILE) says nothing about the key: the resolve is a fault
// (exit 1), as it is when meta.db cannot be opened for it. It was read as
// the legacy reader read any failure, no value: a venue stamp that says
// local read as unreadable, a venue-changed cold start whose promotion
// then replaces the conversation.
func TestLegacySidecarNotReadForWantOfADescriptorIsAFault(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{})
	writeLegacy(t, root, testKey, map[string]string{
		TranscriptName: string(transcriptBytes(clock.now, "legacy turn")),
		"pi-version":   testPi, "venue": "local",
	})
	// The resolve closes descriptors of its own between the two points, so
	// restore's look for one freed by something else cannot tell here:
	// this test runs once (the hazard, lowerFDLimit's, stands).
	var restore func() bool
	lowered := false
	faults.Set(func(p faults.Point) error {
		switch {
		case p == faults.ResolveAfterMetaOpen && !lowered:
			// meta.db found absent: one descriptor more, for the
			// transcript, and none for a sidecar.
			lowered = true
			restore = lowerFDLimit(t, 1)
		case p == faults.ResolveAfterGates && restore != nil:
			restore()
		}
		return nil
	})
	t.Cleanup(func() { faults.Set(nil) })
	sess, err := s.Resolve(testKey, localJob(), t.TempDir())
	if restore != nil {
		restore()
	}
	if !lowered {
		t.Fatal("the resolve never reached the point after meta.db's open")
	}
	// The venue's own open must be the error: the key dir's listing
	// (movedAside), which follows the sidecars, fails with EMFILE too.
	var pe *os.PathError
	if !errors.Is(err, syscall.EMFILE) || !errors.As(err, &pe) || filepath.Base(pe.Path) != "venue" {
		t.Fatalf("resolve with no descriptor for the sidecars = {resume %v, %s}, %v; want the venue's EMFILE", sess.Resume, sess.Reason, err)
	}
	faults.Set(nil)
	sess, _ = mustResolve(t, s, testKey, localJob())
	want(t, sess, true, gates.Resumed)
}

// The legacy venue re-check after the copy, with no descriptor left for
// it, is a fault too, not a venue-changed cold start.
func TestLegacyVenueRecheckWithoutADescriptorIsAFault(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{})
	body := transcriptBytes(clock.now, "legacy turn")
	writeLegacy(t, root, testKey, map[string]string{
		TranscriptName: string(body),
		"pi-version":   testPi, "venue": "local",
	})
	v, err := s.backend.View(testKey, gates.Bounds{})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	var a Acceptance
	starved(t, func() { a = v.Accept(int64(len(body)), crc32.Checksum(body, castagnoli)) })
	if !errors.Is(a.Err, syscall.EMFILE) {
		t.Fatalf("the re-check with no descriptor = %+v; want its error EMFILE", a)
	}
	if a := v.Accept(int64(len(body)), crc32.Checksum(body, castagnoli)); !a.Resume {
		t.Fatalf("the re-check with descriptors = %+v; want resume", a)
	}
}

// A key dir whose listing fails (here for want of a descriptor) cannot
// say whether check --repair moved its meta.db aside: that is an error.
// It was "none moved aside", and a legacy key whose damaged meta.db was
// moved aside was then judged by its stale legacy files (resumed) instead
// of meta-moved-aside.
func TestMovedAsideThatCannotBeListedIsAFault(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{})
	writeLegacy(t, root, testKey, map[string]string{
		TranscriptName: string(transcriptBytes(clock.now, "legacy turn")),
		"pi-version":   testPi, "venue": "local",
		AsidePrefix + "20261129T100000Z": "a damaged meta.db",
	})
	sess, _ := mustResolve(t, s, testKey, localJob())
	want(t, sess, false, gates.MetaMovedAside)
	kd, err := fsat.OpenDir(filepath.Join(root, testKey))
	if err != nil {
		t.Fatal(err)
	}
	defer kd.Close()
	var aside bool
	starved(t, func() { aside, err = movedAside(kd) })
	if !errors.Is(err, syscall.EMFILE) {
		t.Fatalf("movedAside with no descriptor to list the dir = %v, %v; want EMFILE", aside, err)
	}
	if aside, err := movedAside(kd); !aside || err != nil {
		t.Fatalf("movedAside = %v, %v; want true", aside, err)
	}
}
