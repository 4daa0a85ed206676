// Package walk runs one piece of work per entry of a listing on a bounded
// pool of goroutines and hands the results back in the listing's order: a
// walk over many key directories uses every core and still reports in name
// order. check, reap, dump (store.Inspect) and migrate all walk with it,
// so they stop the same way on an interrupt: nothing new is started, the
// entries already started are finished (a key is never abandoned half
// read or half migrated), and what is contiguous is delivered.
package walk

import (
	"context"
	"errors"
	"runtime"
	"sync"
)

// Ordered runs work(i) for every i in [0, n) on up to workers goroutines
// (fewer than one means one) and hands the results to deliver in index
// order, from the calling goroutine.
//
// At most a window of 8*workers results is in flight ahead of the slowest
// one, so memory stays bounded however large n is. When ctx is done, or
// deliver returns an error, no new index is started; the indexes already
// started finish. After ctx ends, those are delivered as far as they are
// contiguous; after a deliver error, nothing more is delivered.
//
// It returns how many results were delivered and the first error of
// deliver, or ctx's error when it stopped early. No goroutine it started
// is running when it returns. work must be safe for concurrent use.
func Ordered[T any](ctx context.Context, n, workers int, work func(i int) T, deliver func(T) error) (int, error) {
	return Stream(ctx, workers, func(emit func(int) error) error {
		for i := range n {
			if err := emit(i); err != nil {
				return err
			}
		}
		return nil
	}, work, deliver)
}

// errStopped is emit's answer once no new entry may start.
var errStopped = errors.New("walk stopped")

// Stream is Ordered over the entries produce gives, however many: a
// listing read a page at a time is walked without being held whole first.
// produce is called once, on a goroutine of Stream's, and calls emit with
// each entry in order, from that goroutine only; emit waits for room in
// the window and returns an error once no new entry may start (ctx done,
// a deliver error), which produce should return at once. Between produce
// and deliver at most the window's entries are held (8*workers), besides
// what produce holds itself.
//
// An error produce returns of its own (its listing failed) ends the walk
// as an interrupt does: the entries it gave are delivered, and then its
// error is returned. Otherwise the errors, the stop and the return are
// Ordered's; a walk that delivered every entry produce gave has no error.
func Stream[S, T any](ctx context.Context, workers int, produce func(emit func(S) error) error, work func(S) T, deliver func(T) error) (int, error) {
	if workers < 1 {
		workers = 1
	}
	window := 8 * workers
	ring := make([]chan T, window) // slot i%window holds result i; the tokens keep two from sharing it
	for i := range ring {
		ring[i] = make(chan T, 1)
	}
	tokens := make(chan struct{}, window)
	type job struct {
		i int
		s S
	}
	jobs := make(chan job)
	stop := make(chan struct{})
	// ended is how produce ended: how many entries it gave, whether emit
	// refused one (ctx done or stop), and its error.
	type ended struct {
		n       int
		refused bool
		err     error
	}
	started := make(chan ended, 1)

	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				ring[j.i%window] <- work(j.s)
			}
		}()
	}
	go func() {
		var end ended
		emit := func(s S) error {
			if end.refused {
				return errStopped
			}
			select {
			case tokens <- struct{}{}:
			case <-ctx.Done():
				end.refused = true
			case <-stop:
				end.refused = true
			}
			// A free token and a done ctx (or a deliver error) can be
			// ready together; select picks at random, and neither an
			// interrupt nor a failed delivery may start more work. Nor
			// may the wait for a free worker outlast them.
			select {
			case <-stop:
				end.refused = true
			default:
			}
			if end.refused || ctx.Err() != nil {
				end.refused = true
				return errStopped
			}
			select {
			case jobs <- job{end.n, s}:
				end.n++
				return nil
			case <-ctx.Done():
			case <-stop:
			}
			end.refused = true
			return errStopped
		}
		end.err = produce(emit)
		close(jobs)
		started <- end
	}()

	delivered, total := 0, -1
	var end ended
	var err error
	for err == nil && delivered != total {
		select {
		case v := <-ring[delivered%window]:
			if err = deliver(v); err == nil {
				delivered++
				<-tokens
			}
		case end = <-started:
			total, started = end.n, nil
		}
	}
	if err != nil {
		close(stop)
		if total < 0 {
			<-started
		}
	}
	wg.Wait()
	switch {
	case err != nil:
	case end.refused:
		// Only a done ctx refuses an entry while deliver has no error.
		err = ctx.Err()
	case end.err != nil:
		err = end.err
	}
	return delivered, err
}

// Workers is the pool size for a walk over small files: w when it is
// positive, else every core but no more than four, past which such a walk
// gains little.
func Workers(w int) int {
	if w > 0 {
		return w
	}
	return min(runtime.GOMAXPROCS(0), 4)
}

// Halt stops a walk at an entry's error the way an interrupt stops it:
// deliver hands the error to Stop and goes on, no new entry is started,
// and the entries already under way are still delivered (a repair or a
// removal they made is done for good and must be reported); Err then
// gives the error after Ordered returns. A deliver error, by contrast,
// ends the delivery at once (a visit that cannot write its report).
type Halt struct {
	cancel context.CancelFunc
	err    error
}

// WithHalt returns the context to pass to Ordered, which Stop ends, and
// its Halt; call Release when the walk is done. The work itself should
// keep ctx, so that the entries under way are not cut short.
func WithHalt(ctx context.Context) (context.Context, *Halt) {
	c, cancel := context.WithCancel(ctx)
	return c, &Halt{cancel: cancel}
}

// Stop records err, if it is the first, and ends the walk's context. It
// returns nil, for deliver to return. Call it from deliver only.
func (h *Halt) Stop(err error) error {
	if h.err == nil {
		h.err = err
		h.cancel()
	}
	return nil
}

// Err is the error Stop recorded, or else err (Ordered's own).
func (h *Halt) Err(err error) error {
	if h.err != nil {
		return h.err
	}
	return err
}

// Release frees the walk's context.
func (h *Halt) Release() { h.cancel() }
