package store

import (
	"context"
	"runtime"
	"sort"
	"sync"

	"sessdb/internal/fsat"
)

// walkOrdered runs work(i) for every i in [0, n) on up to workers
// goroutines and hands the results to deliver in index order, so a walk
// over many keys uses every core and still prints in name order.
//
// At most a window of results is in flight ahead of the slowest one, so
// memory stays bounded however many keys there are. When ctx is done no new
// index is started; the indexes already started finish (a key is never
// abandoned half-read) and are delivered as far as they are contiguous.
// It returns how many results were delivered and the first error of
// deliver, or ctx's error when it stopped early. No goroutine it started is
// running when it returns.
func walkOrdered[T any](ctx context.Context, n, workers int, work func(i int) T, deliver func(T) error) (int, error) {
	if workers < 1 {
		workers = 1
	}
	window := 8 * workers
	ring := make([]chan T, window) // slot i%window holds result i; the tokens keep two from sharing it
	for i := range ring {
		ring[i] = make(chan T, 1)
	}
	tokens := make(chan struct{}, window)
	jobs := make(chan int)
	stop := make(chan struct{})
	started := make(chan int, 1)

	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				ring[i%window] <- work(i)
			}
		}()
	}
	go func() {
		i := 0
	dispatch:
		for ; i < n; i++ {
			select {
			case tokens <- struct{}{}:
			case <-ctx.Done():
				break dispatch
			case <-stop:
				break dispatch
			}
			// A free token and a done ctx can be ready together; select
			// picks at random, and an interrupt must not start more work.
			if ctx.Err() != nil {
				break
			}
			jobs <- i
		}
		close(jobs)
		started <- i
	}()

	delivered, total := 0, -1
	var err error
	for err == nil && delivered != total {
		select {
		case v := <-ring[delivered%window]:
			if err = deliver(v); err == nil {
				delivered++
				<-tokens
			}
		case total = <-started:
			started = nil
		}
	}
	if err != nil {
		close(stop)
		if total < 0 {
			<-started
		}
	}
	wg.Wait()
	if err == nil && delivered < n {
		err = ctx.Err()
	}
	return delivered, err
}

// defaultWorkers is the pool size when the caller names none: every core,
// but not more than a walk of small files gains from.
func defaultWorkers(w int) int {
	if w > 0 {
		return w
	}
	return min(runtime.GOMAXPROCS(0), 4)
}

// rootNames lists the names under the root, sorted, or only name when only
// is set (the root must still exist).
func (s *Store) rootNames(only string) ([]string, error) {
	root, err := fsat.OpenDir(s.root)
	if err != nil {
		return nil, err
	}
	if only != "" {
		root.Close()
		return []string{only}, nil
	}
	defer root.Close()
	names, err := fsat.ReadDirNames(root)
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	return names, nil
}
