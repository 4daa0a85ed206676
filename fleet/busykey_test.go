package fleet

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// A generation superseded longer ago than the grace period is an orphan
// however recently its key was promoted since: its successor's date is in
// the key's history. A key promoted within every grace period (a busy
// one) kept every generation it ever superseded, since each file was
// judged by the record's newest date alone; reap swept none of them and
// check named none, for as long as the key stayed busy. The generation
// superseded within the grace period is kept, as is the record's own.
func TestASupersededGenerationOfABusyKeyGoesAfterTheGrace(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "busy-key", "superseded")
	now := time.Now()
	var files []string
	for i, ago := range []time.Duration{3 * time.Hour, 2 * time.Hour, 10 * time.Minute} {
		f.now = now.Add(-ago)
		f.run(key, []string{"one", "two", "three"}[i])
		st, err := f.b.meta.GetRecord(context.Background(), key)
		if err != nil {
			t.Fatal(err)
		}
		file := st.Record.Transcript.File
		files = append(files, file)
		if err := os.Chtimes(filepath.Join(f.dir, file), f.now, f.now); err != nil {
			t.Fatal(err)
		}
	}
	f.now = time.Time{}
	found, _ := checkFindings(t, f.b, CheckOptions{})
	if fd, ok := found[files[0]]; !ok || fd.Kind != KindOrphan {
		t.Errorf("check found %+v; want gen 1 (superseded 2 h ago) an orphan", found)
	}
	for _, file := range files[1:] {
		if fd, ok := found[file]; ok {
			t.Errorf("check reported %s: %+v; want it kept (superseded 10 min ago, or the record's)", file, fd)
		}
	}
	// check --repair removes it, and it alone, judged again under the
	// key's lock with the history read there.
	repaired, _ := checkFindings(t, f.b, CheckOptions{Repair: true})
	if fd, ok := repaired[files[0]]; !ok || !fd.Repaired {
		t.Errorf("check --repair found %+v; want gen 1 removed", repaired)
	}
	// Made again, for reap to sweep.
	if err := os.WriteFile(filepath.Join(f.dir, files[0]), []byte(testHeader), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(filepath.Join(f.dir, files[0]), now.Add(-3*time.Hour), now.Add(-3*time.Hour)); err != nil {
		t.Fatal(err)
	}
	res, err := f.b.Reap(context.Background(), ReapOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Swept, files[:1]) {
		t.Errorf("reap swept %q; want only gen 1's file %s", res.Swept, files[0])
	}
	for i, file := range files {
		_, err := os.Stat(filepath.Join(f.dir, file))
		if gone := os.IsNotExist(err); gone != (i == 0) {
			t.Errorf("gen %d's file gone: %v; want only gen 1's gone", i+1, gone)
		}
	}
}

// A key whose history does not decode has its files judged by its
// record's date, as before reap read the history: its superseded
// generation past the grace period is swept, not kept for the damage.
func TestAReapSweepsTheOrphanOfAKeyWhoseHistoryDoesNotDecode(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "busy-key", "damaged history")
	now := time.Now()
	var first string
	for i, ago := range []time.Duration{3 * time.Hour, 2 * time.Hour} {
		f.now = now.Add(-ago)
		f.run(key, []string{"one", "two"}[i])
		if i == 0 {
			first = f.recordFile(key)
			if err := os.Chtimes(filepath.Join(f.dir, first), f.now, f.now); err != nil {
				t.Fatal(err)
			}
		}
	}
	f.now = time.Time{}
	if _, err := c.Client(t).Put(t.Context(), f.prefix+"/history/"+key+"/x/0000000000000009", "x"); err != nil {
		t.Fatal(err)
	}
	res, err := f.b.Reap(context.Background(), ReapOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Swept, []string{first}) {
		t.Errorf("reap swept %q (skipped %v); want gen 1's file %s", res.Swept, res.Skipped, first)
	}
}
