package fleet

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sessdb/fleet/shared"
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

// check's orphan line names the date the file was judged by: a
// generation below the record's goes a grace period after the key's
// history says it was superseded, and the line says so, where it named
// only the record's date (a busy key's, minutes old: "promoted 10m ago"
// beside a file an operator could not see why was no longer kept); a
// generation above the record's is named as what it can be, a promotion
// that lost its commit or died before it, judged by the date back to
// which the key's history names no generation above the record's.
func TestCheckNamesTheDateAnOrphanWasJudgedBy(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "busy-key", "the orphan's date")
	now := time.Now()
	var files []string
	for i, ago := range []time.Duration{3 * time.Hour, 2 * time.Hour, 10 * time.Minute} {
		f.now = now.Add(-ago)
		f.run(key, []string{"one", "two", "three"}[i])
		file := f.recordFile(key)
		files = append(files, file)
		if err := os.Chtimes(filepath.Join(f.dir, file), f.now, f.now); err != nil {
			t.Fatal(err)
		}
	}
	// An idle key whose promotion of gen 2 died before its commit, two
	// hours ago: the record, gen 1, is three hours old.
	idle := store.Key("github", "idle-key", "a promotion that died")
	f.now = now.Add(-3 * time.Hour)
	f.run(idle, "one")
	f.now = time.Time{}
	dead, _, _, err := shared.Write(context.Background(), f.dir, idle, 2, strings.NewReader(testHeader))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(filepath.Join(f.dir, dead), now.Add(-2*time.Hour), now.Add(-2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	// A key whose history does not decode: its gen 1 is judged by the
	// record's date, and the line says so, and why no entry dated it.
	damaged := store.Key("github", "busy-key", "a history that does not decode")
	var damagedFirst string
	for i, ago := range []time.Duration{3 * time.Hour, 2 * time.Hour} {
		f.now = now.Add(-ago)
		f.run(damaged, []string{"one", "two"}[i])
		if i == 0 {
			damagedFirst = f.recordFile(damaged)
			if err := os.Chtimes(filepath.Join(f.dir, damagedFirst), f.now, f.now); err != nil {
				t.Fatal(err)
			}
		}
	}
	f.now = time.Time{}
	if _, err := c.Client(t).Put(t.Context(), f.prefix+"/history/"+damaged+"/x/0000000000000009", "x"); err != nil {
		t.Fatal(err)
	}
	// And a file of the record's own generation that is not the
	// record's (a promotion that lost its compare, left): neither below
	// nor above, judged by the record's date.
	lost, _, _, err := shared.Write(context.Background(), f.dir, idle, 1, strings.NewReader(testHeader))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(filepath.Join(f.dir, lost), now.Add(-2*time.Hour), now.Add(-2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	found, _ := checkFindings(t, f.b, CheckOptions{})
	fd, ok := found[files[0]]
	if !ok || fd.Kind != KindOrphan {
		t.Fatalf("check found %+v; want gen 1 an orphan", found)
	}
	if want := "gen 1, superseded 2h ago (the key's history); the record names gen 3, promoted 10m ago, 3h old"; !strings.Contains(fd.Detail, want) {
		t.Errorf("gen 1's orphan line: %q; want it to say %q", fd.Detail, want)
	}
	fd, ok = found[dead]
	if !ok || fd.Kind != KindOrphan {
		t.Fatalf("check found %+v; want the dead promotion's gen 2 an orphan", found)
	}
	if want := "gen 2, above the record's: a promotion that lost its commit or died before it, or an earlier incarnation's whose history is gone; the key's history, back to 3h ago, names no generation above the record's; the record names gen 1, promoted 3h ago, 2h old"; !strings.Contains(fd.Detail, want) {
		t.Errorf("the dead promotion's orphan line: %q; want it to say %q", fd.Detail, want)
	}
	fd, ok = found[lost]
	if !ok || fd.Kind != KindOrphan {
		t.Fatalf("check found %+v; want the lost promotion's gen 1 an orphan", found)
	}
	if want := "gen 1; the record names gen 1, promoted 3h ago, 2h old"; !strings.Contains(fd.Detail, want) {
		t.Errorf("the lost promotion's orphan line: %q; want it to say %q", fd.Detail, want)
	}
	fd, ok = found[damagedFirst]
	if !ok || fd.Kind != KindOrphan {
		t.Fatalf("check found %+v; want gen 1 of the key whose history does not decode an orphan", found)
	}
	if want := "gen 1, superseded (the key's history could not be read to date it: judged by the record's date); the record names gen 2, promoted 2h ago, 3h old"; !strings.Contains(fd.Detail, want) {
		t.Errorf("the orphan line of a key whose history does not decode: %q; want it to say %q (no history read)", fd.Detail, want)
	}
}

// A file above its record's generation that a promotion left when it
// died before its commit is kept while its key is busy only until the
// key's generation passes it, and a grace period after that: a key
// promoted every 40 minutes for five hours does not keep it for as long
// as it stays busy. check names it only once reap would remove it, and
// reap then removes it alone.
func TestADeadPromotionsFileOfABusyKeyGoesOnceTheKeyPassesIt(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "busy-key", "a promotion that died")
	now := time.Now()
	step := func(i int) time.Time { return now.Add(-5*time.Hour + time.Duration(i)*40*time.Minute) }
	f.now = step(0)
	f.run(key, "gen 1")
	f.now = time.Time{}
	dead, _, _, err := shared.Write(context.Background(), f.dir, key, 2, strings.NewReader(testHeader))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(filepath.Join(f.dir, dead), step(0).Add(10*time.Minute), step(0).Add(10*time.Minute)); err != nil {
		t.Fatal(err)
	}
	// Judged at each promotion's time, a minute after it: the file is
	// named exactly from the first check more than the grace period after
	// the promotion that passed it (gen 3's, at step 2).
	for i := 1; i <= 7; i++ {
		f.now = step(i)
		f.run(key, "gen "+string(rune('1'+i)))
		at := step(i).Add(time.Minute)
		found, _ := checkFindings(t, f.b, CheckOptions{Now: func() time.Time { return at }})
		_, named := found[dead]
		if want := at.Sub(step(2)) > DefaultGrace; named != want {
			t.Errorf("check at gen %d (gen 3 landed %v before): dead gen 2 named %v; want %v", i+1, at.Sub(step(2)), named, want)
		}
	}
	f.now = time.Time{}
	res, err := f.b.Reap(context.Background(), ReapOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Swept, []string{dead}) {
		t.Errorf("reap swept %q; want only the dead promotion's %s", res.Swept, dead)
	}
}
