package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sessdb/gates"
	"sessdb/internal/pientry"
)

// bigRun appends to data a turn whose prompt is about 7 MiB: a run whose
// copies, in the resolve and in the promote, take several chunks.
func bigRun(data []byte, tag string) []byte {
	data = pientry.Message(data, "u-"+tag, "user", strings.Repeat("x", 7<<20), "", 0)
	return pientry.Message(data, "a-"+tag, "assistant", "answer "+tag, "stop", 100)
}

// A resolve and a promote of a 7 MiB transcript given up at each of their
// looks at ctx in turn, the copies' chunks among them: each is whole or
// given up, never half. A resolve given up leaves neither its staged file
// nor a ticket (an earlier resolve's included); a promote given up is
// promote-failed with the cancel, the key as it was and the run in its
// job dir, and the next try with the same Session promotes.
func TestCancelAtEveryLookOfABigCopy(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	job := localJob()
	sess, dir, data := contractJob(t, s, testKey, "first")
	run := bigRun(data, "1")
	stage(t, dir, run)
	if res := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi}); !res.Promoted {
		t.Fatalf("the first promote: %+v", res)
	}

	copies := 0 // resolves given up in their copy
	for n := int64(0); ; n++ {
		_, jobDir := mustResolve(t, s, testKey, job) // an earlier resolve's ticket and copy
		ctx := &countdown{Context: context.Background()}
		ctx.n.Store(n)
		got, err := s.ResolveContext(ctx, testKey, job, jobDir)
		if err == nil {
			if !got.Resume || got.Bytes != int64(len(run)) || int64(len(staged(t, jobDir))) != got.Bytes {
				t.Fatalf("cancelled at look %d: resolve = %+v, %d bytes staged; want the whole %d", n, got, len(staged(t, jobDir)), len(run))
			}
			break
		}
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled at look %d: resolve = %v, want context.Canceled", n, err)
		}
		if n == 0 {
			continue // done before the call: the job dir is the earlier resolve's
		}
		for _, name := range []string{filepath.Join(StagedDirName, TranscriptName), TicketName} {
			if _, err := os.Lstat(filepath.Join(jobDir, name)); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("cancelled at look %d: %s left: %v", n, name, err)
			}
		}
		if strings.Contains(err.Error(), "copy ") {
			copies++
		}
		if n > 100 {
			t.Fatalf("still given up after %d looks at ctx: %v", n, err)
		}
	}
	if copies < 2 {
		t.Fatalf("%d resolves given up in their copy of %d bytes, want one a chunk", copies, len(run))
	}

	sess, dir, data = contractJob(t, s, testKey, "second")
	run = bigRun(data, "2")
	stage(t, dir, run)
	reads, stages := 0, 0 // promotes given up in their read of the run, and later
	// The promote's read of the run looks at ctx before each of its
	// reads (hundreds): the looks are taken further apart as they go.
	for try, n := 0, int64(1); ; try, n = try+1, n+max(1, n/4) {
		ctx := &countdown{Context: context.Background()}
		ctx.n.Store(n)
		res, err := s.PromoteContext(ctx, sess, PromoteRequest{PiVersion: testPi})
		if err == nil {
			if !res.Promoted || res.Repeat || res.Gen != 2 || res.Bytes != int64(len(run)) {
				t.Fatalf("cancelled at look %d: promote = %+v; want gen 2 promoted, not a repeat", n, res)
			}
			break
		}
		if !errors.Is(err, context.Canceled) || res.Promoted || res.Reason != gates.PromoteFailed {
			t.Fatalf("cancelled at look %d: promote = %+v, %v; want promote-failed, context.Canceled", n, res, err)
		}
		if strings.Contains(err.Error(), "read ") {
			reads++
		} else {
			stages++
		}
		if now := staged(t, dir); string(now) != string(run) {
			t.Fatalf("cancelled at look %d: the run in the job dir is %d bytes, was %d", n, len(now), len(run))
		}
		if again, _ := mustResolve(t, s, testKey, job); again.Base.Gen != 1 {
			t.Fatalf("cancelled at look %d: the key moved to gen %d", n, again.Base.Gen)
		}
		if try > 100 {
			t.Fatalf("still given up after %d looks at ctx: %v", n, err)
		}
	}
	// Given up at two looks after the read, at most one of them the look
	// before the commit: one at least was in Stage's copy.
	if reads < 2 || stages < 2 {
		t.Fatalf("promotes given up: %d in the read of the run, %d after it; want 2 of each", reads, stages)
	}
}
