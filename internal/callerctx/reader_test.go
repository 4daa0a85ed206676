package callerctx_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"sessdb/internal/callerctx"
)

// A copy through Reader reads as its source does until its context is
// done, and then reads nothing more, failing with the context's error,
// not the source's.
func TestReaderStopsAtItsContextsEnd(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	r := callerctx.Reader(ctx, strings.NewReader("abcdef"))
	p := make([]byte, 2)
	if n, err := r.Read(p); n != 2 || err != nil || string(p) != "ab" {
		t.Fatalf("read before the stop: %d %q %v; want 2 \"ab\" nil", n, p[:n], err)
	}
	cancel()
	if n, err := r.Read(p); n != 0 || !errors.Is(err, context.Canceled) {
		t.Fatalf("read after the stop: %d %v; want 0 and context.Canceled", n, err)
	}
	if n, err := io.Copy(io.Discard, r); n != 0 || !errors.Is(err, context.Canceled) {
		t.Fatalf("copy after the stop: %d %v; want 0 and context.Canceled", n, err)
	}
}
