package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"sessdb/store"
	"sessdb/store/transcript"
)

// These run in `go test ./...`: they check the helpers the benchmarks rely
// on, cheaply. The benchmarks themselves need -bench.

func TestTranscriptIsExactAndValid(t *testing.T) {
	for _, size := range []int{1 << 10, 64 << 10, 64<<10 + 7, 1 << 20} {
		b := Transcript(size)
		if len(b) != size {
			t.Errorf("Transcript(%d) is %d bytes", size, len(b))
		}
		if b[len(b)-1] != '\n' {
			t.Errorf("Transcript(%d) does not end in a newline", size)
		}
		h, err := transcript.ReadHeader(bytes.NewReader(b))
		if err != nil || !h.IsSession() {
			t.Errorf("Transcript(%d) header: %+v, %v", size, h, err)
		}
	}
}

func TestAllocatedAndCopySparse(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	data := make([]byte, 64<<10)
	copy(data, "head")
	copy(data[40<<10:], "tail")
	if err := os.WriteFile(src, data, 0o600); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "dst")
	if err := CopySparse(src, dst, 0o600); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(dst)
	if !bytes.Equal(got, data) {
		t.Fatal("CopySparse changed the content")
	}
	full, err := Allocated(src)
	if err != nil {
		t.Fatal(err)
	}
	sparse, err := Allocated(dst)
	if err != nil {
		t.Fatal(err)
	}
	if sparse >= full || sparse == 0 {
		t.Errorf("sparse copy allocates %d bytes, the dense original %d", sparse, full)
	}
}

// TestPromoteNPromotesEveryTime checks the setup every sessdb benchmark of
// a warm key starts from: n promotions that each land, as a job's would,
// leaving the key at generation n, resumable, and holding data whole. (A
// setup that promoted without a real ticket was superseded from its
// second promotion on, and every such benchmark failed before timing
// anything.)
func TestPromoteNPromotesEveryTime(t *testing.T) {
	s := newStore(t, filepath.Join(workDir(t), "sessions"))
	key := benchKey(1)
	const n = 70 // past the history ring, as the benchmarks promote
	data := Transcript(4096)
	promoteN(t, s, key, data, n)
	sess, err := s.Resolve(key, job, workDir(t))
	if err != nil || !sess.Resume || sess.Base.Gen != n || sess.Bytes != int64(len(data)) {
		t.Fatalf("after promoteN(%d): resolve %v, resume %v, gen %d, %d bytes (%s); want a resume of gen %d, %d bytes", n, err, sess.Resume, sess.Base.Gen, sess.Bytes, sess.Reason, n, len(data))
	}
}

// TestAlternatingRunsChangeTheSize checks the promotion benchmarks' loop:
// each promotion lands, and each leaves a transcript of another size than
// the one before it, as a growing conversation does.
func TestAlternatingRunsChangeTheSize(t *testing.T) {
	s := newStore(t, filepath.Join(workDir(t), "sessions"))
	key := benchKey(1)
	data := Transcript(4096)
	promoteN(t, s, key, data, 3)
	sess, err := s.Resolve(key, job, workDir(t))
	if err != nil || !sess.Resume {
		t.Fatalf("resolve: %v %+v", err, sess)
	}
	runs := alternateRuns(t, sess, data)
	req := store.PromoteRequest{PiVersion: piVersion, Tokens: &readingTokens, Window: readingWindow}
	last := int64(len(data))
	for n := 1; n <= 4; n++ {
		res, err := runs.promote(s, n, req)
		if err != nil || !res.Promoted || res.Repeat {
			t.Fatalf("promotion %d: %v %+v", n, err, res)
		}
		if res.Bytes == last {
			t.Fatalf("promotion %d left %d bytes, as the one before it", n, res.Bytes)
		}
		last = res.Bytes
	}
}
