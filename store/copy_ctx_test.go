package store

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
)

// maxTranscript8MiB is the default byte cap's transcript: the largest copy a
// resolve or a promote makes with the default bounds.
const maxTranscript8MiB = 8 << 20

// writeBig writes an 8 MiB transcript-sized file and returns it opened.
func writeBig(t *testing.T) (*os.File, []byte) {
	t.Helper()
	data := bytes.Repeat([]byte(`{"type":"message","n":0123456789}`+"\n"), maxTranscript8MiB/34+1)[:maxTranscript8MiB]
	p := filepath.Join(t.TempDir(), "src")
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f, data
}

// cancelOnWrite counts what is written to it, and cancels on the first
// write: the copy's caller gives up as its first chunk lands.
type cancelOnWrite struct {
	cancel  context.CancelFunc
	written int64
}

func (c *cancelOnWrite) Write(p []byte) (int, error) {
	c.cancel()
	c.written += int64(len(p))
	return len(p), nil
}

// A resolve's copy of an 8 MiB transcript stops at the first read after
// its caller's cancel, with the caller's error: at most one chunk (bigCopy)
// is copied after it, never the rest of the file.
func TestCopyCountedStopsAtCancel(t *testing.T) {
	src, _ := writeBig(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dst := &cancelOnWrite{cancel: cancel}
	n, _, err := copyCounted(ctx, dst, src, maxTranscript8MiB+1)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("copy cancelled during its first chunk = %d bytes, %v; want context.Canceled", n, err)
	}
	var lost *sourceError
	if errors.As(err, &lost) {
		t.Fatalf("the cancel is taken for the source's read error: %v (KeyView.Lost would judge it)", err)
	}
	if dst.written > bigCopy || n != dst.written {
		t.Fatalf("copied %d bytes (%d written) after a cancel during the first chunk, want at most %d", n, dst.written, bigCopy)
	}
}

// countdown is a context that is done after its Err was asked n times:
// a cancel at a chosen read of a copy.
type countdown struct {
	context.Context
	n atomic.Int64
}

func (c *countdown) Err() error {
	if c.n.Add(-1) < 0 {
		return context.Canceled
	}
	return nil
}

// Done is never closed, but not nil: readerAtIn and copyCountedIn take the
// context for one that can end, and look at Err.
func (c *countdown) Done() <-chan struct{} { return make(chan struct{}) }

// A promote's read of an 8 MiB staged file, and the ReaderAt its Stage
// copies from, stop at the first read after the cancel.
func TestStagedReadsStopAtCancel(t *testing.T) {
	f, data := writeBig(t)
	ctx := &countdown{Context: context.Background()}
	ctx.n.Store(3)
	_, err := readStaged(ctx, stagedFile{f: f, size: int64(len(data))}, Session{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("readStagedIn cancelled at its fourth read = %v, want context.Canceled", err)
	}
	ctx.n.Store(1)
	r := readerAtIn(ctx, f)
	buf := make([]byte, 32<<10)
	if _, err := r.ReadAt(buf, 0); err != nil {
		t.Fatalf("a read before the cancel: %v", err)
	}
	if n, err := r.ReadAt(buf, 0); n != 0 || !errors.Is(err, context.Canceled) {
		t.Fatalf("a read after the cancel = %d bytes, %v; want none, context.Canceled", n, err)
	}
	if readerAtIn(context.Background(), f) != f {
		t.Fatal("a context that never ends wraps the staged file: the copy of Promote pays for a check it never needs")
	}
}
