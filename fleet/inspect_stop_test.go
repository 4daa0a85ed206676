package fleet

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"sessdb/fleet/etcdmeta"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// A visit error stops dump's listing too, wherever the walk is among the
// records and the histories with no record placed among them: it returns
// that error, and the records listed past the key whose visit failed are
// at most the walk's window and a page, not every record etcd holds.
// Before the listing heeded the walk's refusal, it went on listing every
// page to the last; and a history with no record whose report was
// refused, looked at again and again, never let the walk return.
func TestADumpStoppedByItsVisitListsNoMore(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	const n, strays, workers = 100, 20, 1
	for i := range n {
		key := store.Key("github", "dump-stop", fmt.Sprint(i))
		if _, err := f.b.meta.Put(t.Context(), key, 0, etcdmeta.Record{}, etcdmeta.HistoryEntry{Gen: 0, At: 1}); err != nil {
			t.Fatal(err)
		}
	}
	// Histories with no record before every record and after them all
	// (a key is 32 hex digits).
	for i := range strays {
		for _, key := range []string{fmt.Sprintf("%032x", i), fmt.Sprintf("ffff%028x", i)} {
			if _, err := c.Client(t).Put(t.Context(), f.prefix+"/history/"+key+"/x", "x"); err != nil {
				t.Fatal(err)
			}
		}
	}
	var listed atomic.Int64
	f.b.hook = func(p, k string) error {
		if p == hookListed {
			listed.Add(1)
		}
		return nil
	}
	defer func() { f.b.hook = nil }()
	stop := errors.New("the caller has seen enough")
	// Where the visit fails, how many keys it is then given in all, and
	// whether the records are listed by then anyway (past every record).
	for _, at := range []struct {
		what    string
		stop    func(name string) bool
		visited int
		all     bool
	}{
		{"the first key", func(string) bool { return true }, 1, false},
		{"the first record", func(name string) bool { return !strings.HasPrefix(name, "0000") }, strays + 1, false},
		{"a history with no record past every record", func(name string) bool { return strings.HasPrefix(name, "ffff") }, strays + n + 1, true},
	} {
		listed.Store(0)
		visited := 0
		err := f.b.Inspect(t.Context(), InspectOptions{Workers: workers}, func(r Report) error {
			visited++
			if at.stop(r.Name) {
				return stop
			}
			return nil
		})
		// The pages grow twice over from 2 records while the records are
		// small: the page being passed on when the walk stops holds at
		// most twice the records listed before it.
		if most := 3 * (8*workers + 2); !errors.Is(err, stop) || visited != at.visited || !at.all && listed.Load() > int64(most) {
			t.Fatalf("a dump stopped at %s: %v, %d keys visited, %d of %d records listed; want its visit's error, %d visited, at most %d listed", at.what, err, visited, listed.Load(), n, at.visited, most)
		}
	}
}
