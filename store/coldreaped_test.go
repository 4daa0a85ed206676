package store

import (
	"bytes"
	"testing"
	"time"

	"sessdb/gates"
)

// On a sessions root, as in a fleet (fleet's
// TestAColdRunWhoseKeyWasReapedSinceIsPromoted): a job resolved expired
// whose key the next reap removed before its promote is promoted onto the
// key that holds nothing, not superseded by nothing (superseded_by 0, the
// key left empty, the run in its job dir, as it was before).
func TestAColdRunWhoseKeyWasReapedSinceIsPromoted(t *testing.T) {
	const ttl = time.Hour
	s, root, clock := newTestStore(t, gates.Bounds{TTL: ttl})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "the old conversation")
	clock.now = clock.now.Add(2 * ttl)
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	want(t, sess, false, gates.Expired)
	if res, err := s.Reap(false); err != nil || len(res.Removed) != 1 {
		t.Fatalf("reap: %+v, %v", res, err)
	}
	run := append(transcriptBytes(clock.now), entryLine("a new one")...)
	stage(t, jobDir, run)
	res := mustPromote(t, s, sess, PromoteRequest{PiVersion: localJob().PiVersion})
	if !res.Promoted || res.Gen != 1 {
		t.Fatalf("the expired job's promote once its key was reaped: %+v; want promoted, gen 1", res)
	}
	if got := readCanonical(t, root, testKey); !bytes.Equal(got, run) {
		t.Fatalf("the key holds %q, want the job's run", got)
	}
}
