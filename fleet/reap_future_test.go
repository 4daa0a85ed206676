package fleet

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// A dead write's temp, and a file of a generation above its key's
// record, dated in the future (a clock that was ahead, then set back; a
// date set by hand) are kept as in flight while their date is ahead, as
// a key dated in the future is kept (operations.md, "The host's
// clock"), under the default grace and under one shorter than the
// in-flight window alike: a commit may still name them. They are no leak
// for ever: once the reaper's clock (the file server's) passes their date
// by the grace period and the in-flight window, they are swept as any
// dead write's. (Untested before: no test dated a file ahead.)
func TestReapKeepsAFileDatedAheadUntilItsDatePasses(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	for _, grace := range []time.Duration{DefaultGrace, time.Second} {
		key := store.Key("github", "reap-future", grace.String())
		f.run(key, "one")
		ahead := time.Now().Add(365 * 24 * time.Hour).Truncate(time.Second)
		var dated []string
		for _, name := range []string{".tmp-0123456789abcdef", "0000000000000002-0123456789abcdef.jsonl"} {
			p := filepath.Join(f.dir, key, name)
			if err := os.WriteFile(p, []byte("a write that died"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(p, ahead, ahead); err != nil {
				t.Fatal(err)
			}
			dated = append(dated, key+"/"+name)
		}
		all := append([]string{f.recordFile(key)}, dated...)
		slices.Sort(all)
		// Now, a minute before their date, and past it within the
		// in-flight window. (The record's file is its own: kept whatever
		// the clock.)
		for _, now := range []time.Time{time.Now(), ahead.Add(-time.Minute), ahead.Add(inFlightAge - time.Minute)} {
			res, err := f.b.Reap(t.Context(), ReapOptions{Grace: grace, Now: func() time.Time { return now }})
			if err != nil || len(res.Swept) != 0 || !slices.Equal(f.files(key), all) {
				t.Fatalf("grace %v: reap at %v, the files dated %v: %+v, %v, the key's files %v; want all kept", grace, now, ahead, res, err, f.files(key))
			}
		}
		later := ahead.Add(max(grace, inFlightAge) + time.Minute)
		res, err := f.b.Reap(t.Context(), ReapOptions{Grace: grace, Now: func() time.Time { return later }})
		slices.Sort(res.Swept)
		if err != nil || !slices.Equal(res.Swept, dated) {
			t.Fatalf("grace %v: reap once the clock passed their date by the grace and the in-flight window: %+v, %v; want %v swept", grace, res, err, dated)
		}
		f.holds(key, "one", 1)
	}
}
