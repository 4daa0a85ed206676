package callerctx

import (
	"context"
	"io"
)

// Reader is r, failing with ctx's error once ctx is done. ctx is looked
// at before each read, so that a copy through it stops within one read
// of its caller's stop, and the error it stops with is the caller's,
// not the source's (a copy's caller tells a stop from a failed read by
// it).
func Reader(ctx context.Context, r io.Reader) io.Reader { return reader{ctx, r} }

type reader struct {
	ctx context.Context
	r   io.Reader
}

// Read reads from r unless ctx is done.
func (c reader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
