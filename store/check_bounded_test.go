package store

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"sessdb/gates"
)

// countingReader counts the bytes verify reads, and calls after (when
// set) once a read is done.
type countingReader struct {
	r     io.ReaderAt
	n     *atomic.Int64
	reads *atomic.Int64
	after func()
}

func (c countingReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.n.Add(int64(n))
	c.reads.Add(1)
	if c.after != nil {
		c.after()
	}
	return n, err
}

// countVerifyReads makes verify read through a counter for the test's
// length, and returns the bytes and the reads counted.
func countVerifyReads(t *testing.T, after func()) (bytes, reads *atomic.Int64) {
	t.Helper()
	bytes, reads = new(atomic.Int64), new(atomic.Int64)
	prev := verifySource
	verifySource = func(f *os.File) io.ReaderAt { return countingReader{f, bytes, reads, after} }
	t.Cleanup(func() { verifySource = prev })
	return bytes, reads
}

// sparseMismatch promotes a small transcript to key and then makes
// current.jsonl a sparse file of size bytes, as a hostile or damaged disk
// can; the record still says the small size, which it returns.
func sparseMismatch(t *testing.T, s *Store, root, key string, size int64) int64 {
	t.Helper()
	_, res := runJob(t, s, key, localJob(), PromoteRequest{}, "small")
	if err := os.Truncate(filepath.Join(root, key, TranscriptName), size); err != nil {
		t.Fatal(err)
	}
	return res.Bytes
}

// A 64 GiB sparse transcript whose record says a few hundred bytes is read
// no further than the record's size plus one byte, by check and by dump
// --verify, with and without a max-bytes bound, and reported as the
// mismatch it is (issue 15.6: both read the whole file, 29 s and 110 s).
func TestVerifyReadsNoMoreThanTheRecordSays(t *testing.T) {
	for _, maxBytes := range []int64{0, 8 << 20} {
		s, root, _ := newTestStore(t, gates.Bounds{MaxBytes: maxBytes})
		key := Key("github", "acme/check", "sparse")
		recorded := sparseMismatch(t, s, root, key, 64<<30)
		bytes, _ := countVerifyReads(t, nil)

		found, _ := chkRun(t, s, false)
		f := chkFind(found, key+"/"+TranscriptName, KindTranscriptMismatch)
		if f == nil || !strings.Contains(f.Detail, "68719476736 bytes, the record says") {
			t.Fatalf("max-bytes %d: check found %+v", maxBytes, found)
		}
		if n := bytes.Load(); n > recorded+1 {
			t.Fatalf("max-bytes %d: check read %d bytes of a transcript recorded as %d", maxBytes, n, recorded)
		}

		bytes.Store(0)
		var rep KeyReport
		err := s.InspectWith(context.Background(), InspectOptions{Verify: true}, func(r KeyReport) error { rep = r; return nil })
		if err != nil || rep.Verify == nil || rep.Verify.Result != VerifyMismatch {
			t.Fatalf("max-bytes %d: dump --verify = %+v, %v", maxBytes, rep.Verify, err)
		}
		if n := bytes.Load(); n > recorded+1 || rep.Verify.Bytes != n {
			t.Fatalf("max-bytes %d: dump --verify read %d bytes (reported %d) of a transcript recorded as %d", maxBytes, n, rep.Verify.Bytes, recorded)
		}
	}
}

// With max-bytes set, a transcript over it is not read at all: a resolve
// refuses it as too-large whatever it holds. A key with no record (legacy)
// has no record to bound the read, so the bound is max-bytes alone.
func TestVerifyReadsNothingOverMaxBytes(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{MaxBytes: 1 << 20})
	key := Key("github", "acme/check", "legacy-huge")
	kd := filepath.Join(root, key)
	os.MkdirAll(kd, 0o700)
	os.WriteFile(filepath.Join(kd, TranscriptName), transcriptBytes(s.opts.Now()), 0o600)
	os.Truncate(filepath.Join(kd, TranscriptName), 64<<30)
	bytes, _ := countVerifyReads(t, nil)
	var rep KeyReport
	if err := s.InspectWith(context.Background(), InspectOptions{Verify: true}, func(r KeyReport) error { rep = r; return nil }); err != nil {
		t.Fatal(err)
	}
	if rep.Verify == nil || rep.Verify.Result != VerifyTooLarge || bytes.Load() != 0 {
		t.Fatalf("verify = %+v after reading %d bytes", rep.Verify, bytes.Load())
	}
	if found, _ := chkRun(t, s, false); len(found) != 0 || bytes.Load() != 0 {
		t.Fatalf("check found %+v after reading %d bytes", found, bytes.Load())
	}
}

// An interrupt in the middle of a transcript stops the read at the next
// chunk: the walk returns the context's error after at most one more
// chunk, and the key being read is not reported half-read.
func TestVerifyStopsMidFileOnCancel(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	key := Key("github", "acme/check", "long")
	// A real transcript of 5 chunks whose record matches it.
	sess, jobDir := mustResolve(t, s, key, localJob())
	data := transcriptBytes(s.opts.Now())
	for len(data) < 5*verifyChunk {
		data = append(data, entryLine(strings.Repeat("x", 4000))...)
	}
	stage(t, jobDir, data)
	if res := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi}); !res.Promoted {
		t.Fatalf("promote: %+v", res)
	}

	for _, walk := range []string{"check", "dump --verify"} {
		ctx, cancel := context.WithCancel(context.Background())
		_, reads := countVerifyReads(t, cancel) // the interrupt comes during the first chunk
		var err error
		var visited int
		if walk == "check" {
			_, err = s.Check(ctx, CheckOptions{}, func(Finding) error { visited++; return nil })
		} else {
			err = s.InspectWith(ctx, InspectOptions{Verify: true}, func(KeyReport) error { visited++; return nil })
		}
		cancel()
		if err != context.Canceled || visited != 0 {
			t.Fatalf("%s: err %v, %d visited; want context.Canceled and the key not reported", walk, err, visited)
		}
		if n := reads.Load(); n > 2 {
			t.Fatalf("%s: %d chunks read after the interrupt came in the first, want at most one more", walk, n)
		}
	}
}
