package store

import (
	"errors"
	"syscall"
	"testing"

	"sessdb/gates"
	"sessdb/internal/faults"
)

// A legacy key's identity check after its copy (is current.jsonl still
// the file copied?) whose lstat fails other than "no such file" (for want
// of kernel memory, an I/O error) says nothing of the file: the resolve is
// a fault. It was read as "replaced": transcript-replaced, a closed rung's
// cold start whose job's cold run then replaced the conversation
// (reproduced with strace failing that newfstatat with ENOMEM).
func TestLegacyIdentityNotLookedAtIsAFault(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{})
	writeLegacy(t, root, testKey, map[string]string{
		TranscriptName: string(transcriptBytes(clock.now, "legacy turn")),
		"pi-version":   testPi, "venue": "local",
	})
	enomem := syscall.ENOMEM
	faults.Set(func(p faults.Point) error {
		if p == faults.LegacyIdentityLstat {
			return enomem
		}
		return nil
	})
	t.Cleanup(func() { faults.Set(nil) })
	sess, err := s.Resolve(testKey, localJob(), t.TempDir())
	if !errors.Is(err, enomem) {
		t.Fatalf("resolve with the identity check's lstat failing = {resume %v, %s}, %v; want its error", sess.Resume, sess.Reason, err)
	}
	faults.Set(nil)
	sess, _ = mustResolve(t, s, testKey, localJob())
	want(t, sess, true, gates.Resumed)
}
