package walk

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
)

// A walk whose ctx is done before it begins starts no entry: emit refuses
// the first, and the walk returns ctx's error. A free token and a free
// worker are ready beside the done ctx at every step; select picks among
// them at random, so that a walk that looked at ctx only in the selects
// started an entry up to one time in four.
func TestStreamWithADoneContextStartsNothing(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for range 200 {
		var worked atomic.Int32
		refused := false
		produce := func(emit func(int) error) error {
			// Let the workers reach their wait for an entry: a free
			// worker is then ready beside the done ctx too.
			for range 100 {
				runtime.Gosched()
			}
			for i := range 4 {
				if err := emit(i); err != nil {
					refused = true
					return err
				}
			}
			return nil
		}
		delivered, err := Stream(ctx, 2, produce, func(i int) int { worked.Add(1); return i }, func(int) error { return nil })
		if delivered != 0 || worked.Load() != 0 || !refused || !errors.Is(err, context.Canceled) {
			t.Fatalf("a walk with a done ctx: delivered %d, worked %d, refused %v, %v; want nothing started, context.Canceled", delivered, worked.Load(), refused, err)
		}
	}
}

// An entry emit waits to start, refused when ctx ends meanwhile, is an
// error of emit's: a walk that took it as started, and delivered the
// entries before it, would return no error for a walk cut short.
func TestStreamRefusesAnEntryWaitingForAWorkerWhenCtxEnds(t *testing.T) {
	for range 50 {
		ctx, cancel := context.WithCancel(context.Background())
		next, refused := make(chan struct{}), make(chan struct{})
		var second error
		produce := func(emit func(int) error) error {
			if err := emit(0); err != nil {
				t.Errorf("the first entry refused: %v", err)
				return err
			}
			close(next)
			second = emit(1) // waits for the one worker, busy with 0
			close(refused)
			return second
		}
		work := func(i int) int {
			if i == 0 {
				<-next
				// Let emit(1) reach its wait for a worker, as it
				// mostly does; either way it must be refused.
				for range 100 {
					runtime.Gosched()
				}
				cancel()
				<-refused
			}
			return i
		}
		delivered, err := Stream(ctx, 1, produce, work, func(int) error { return nil })
		if !errors.Is(second, errStopped) || !errors.Is(err, context.Canceled) || delivered != 1 {
			t.Fatalf("a ctx ended while an entry waited for a worker: emit %v, walk delivered %d, %v; want the entry refused, 1 delivered, context.Canceled", second, delivered, err)
		}
		cancel()
	}
}
