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
	"sessdb/internal/testfs"
)

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
	// The venue's own open must be the error: the key dir's listing
	// (movedAside), which follows the sidecars, fails with EMFILE too.
	venueStarved := func(err error) bool {
		var pe *os.PathError
		return errors.Is(err, syscall.EMFILE) && errors.As(err, &pe) && filepath.Base(pe.Path) == "venue"
	}
	var sess Session
	var err error
	for try := 1; ; try++ {
		var restore func() bool
		faults.Set(func(p faults.Point) error {
			if p == faults.ResolveAfterMetaOpen && restore == nil {
				// meta.db found absent: one descriptor more, for the
				// transcript, and none for a sidecar.
				restore = testfs.LowerFDLimit(t, 1)
			}
			return nil
		})
		sess, err = s.Resolve(testKey, localJob(), t.TempDir())
		faults.Set(nil)
		if restore == nil {
			t.Fatal("the resolve never reached the point after meta.db's open")
		}
		// restore's look for a descriptor freed below the limit also
		// finds the resolve's own, closed as it returned (its key dir):
		// it can say "freed" when none was, never "held" when one was.
		// Only the venue's own EMFILE is a starved run's result, and a
		// run that did not give it is run again unless starvation held.
		if held := restore(); venueStarved(err) || held || try == 5 {
			break
		}
		t.Logf("try %d: {resume %v, %s}, %v, and a descriptor below the limit may have been freed meanwhile; the resolve runs again", try, sess.Resume, sess.Reason, err)
	}
	t.Cleanup(func() { faults.Set(nil) })
	if !venueStarved(err) {
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
	testfs.Starved(t, func() { a = v.Accept(int64(len(body)), crc32.Checksum(body, castagnoli)) })
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
	testfs.Starved(t, func() { aside, err = movedAside(kd) })
	if !errors.Is(err, syscall.EMFILE) {
		t.Fatalf("movedAside with no descriptor to list the dir = %v, %v; want EMFILE", aside, err)
	}
	if aside, err := movedAside(kd); !aside || err != nil {
		t.Fatalf("movedAside = %v, %v; want true", aside, err)
	}
}
