package bench

import (
	"fmt"
	"hash/crc32"
	"maps"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/migrate"
	"sessdb/store"
)

// migrateKeys is how many legacy key dirs each migration converts: the
// issue's "migrate of 10,000 legacy key dirs".
const migrateKeys = 10000

// migrateTranscript is the size of every fleet transcript. Migration reads
// the whole transcript once (its CRC32C goes into meta.db), so the size
// matters, a little; 16 KiB is the default of migrate's own
// TestMigrationFigure, so the two figures can be set side by side.
const migrateTranscript = 16 << 10

// BenchmarkMigrate converts a sessions root of 10,000 legacy key dirs to
// meta.db (migrate.ToDB, what `sessdb migrate DIR` runs) and one of 10,000
// migrated key dirs back (migrate.ToLegacy, the rollback, `sessdb migrate
// --to-legacy DIR`), on 1 and 2 workers (migrate.Options.Workers). Each
// legacy key dir is what the dump fixture's are (legacySeed: the
// transcript and the four sidecars), with a 16 KiB transcript.
//
// Migration is destructive, so every op converts a fleet of its own: a copy
// of a pristine fleet, made with the timer stopped and written back
// (syncfs) before the timer starts, so that no writeback of the copy lands
// in the measurement. The pristine fleets are fixtures, built once (the
// migrated one by migrate.ToDB itself) and kept like the dump fixtures. The
// copies are removed when every sub-benchmark has run, never between two
// timed ops (see work in setup_test.go); the migrations' own removals (four
// sidecars a key to-db, meta.db to-legacy) are part of what is measured.
//
// The baseline, measured in the same process: legacy-walk/Nw, the dump
// benchmark's legacy walk over the pristine legacy fleet, warm.
//
// Reported per key: ns/key, keys/s; and for the migrations, what the fleet
// takes on disk per key before and after the op (st_blocks*512, as du
// counts): before-B/key and after-B/key for the whole key dir (directory
// and transcript included), before-meta-B/key and after-meta-B/key for
// what is not the transcript (the four sidecars, or meta.db). The page
// cache is warm: the copy was just written.
func BenchmarkMigrate(b *testing.B) {
	var spent []string // the copies, removed once every sub-benchmark has run
	b.Cleanup(func() {
		for _, d := range spent {
			os.RemoveAll(d)
		}
	})
	for _, workers := range []int{1, 2} {
		b.Run(fmt.Sprintf("legacy-walk/%dw", workers), func(b *testing.B) {
			root := migrateFixture(b, "legacy")
			walkLegacy(b, root, workers) // the first walk warms the cache
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				walkLegacy(b, root, workers)
			}
			reportPerKey(b, migrateKeys)
		})
	}
	for _, dir := range []string{"to-db", "to-legacy"} {
		from, convert := "legacy", migrate.ToDB
		if dir == "to-legacy" {
			from, convert = "db", migrate.ToLegacy
		}
		for _, workers := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/%dw", dir, workers), func(b *testing.B) {
				pristine := migrateFixture(b, from)
				var before, after fleetDisk
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					parent := workDir(b)
					spent = append(spent, parent)
					root := filepath.Join(parent, "sessions")
					cloneFleet(b, pristine, root)
					if err := SyncFS(root); err != nil {
						b.Fatal(err)
					}
					before = diskOfFleet(b, root)
					b.StartTimer()

					sum, err := convert(root, migrate.Options{Workers: workers}, func(migrate.Report) error { return nil })

					b.StopTimer()
					if err != nil || sum.Migrated != migrateKeys || !sum.Complete() {
						b.Fatalf("%s: %+v, %v", dir, sum, err)
					}
					after = diskOfFleet(b, root)
					b.StartTimer()
				}
				reportPerKey(b, migrateKeys)
				before.report(b, "before", migrateKeys)
				after.report(b, "after", migrateKeys)
			})
		}
	}
}

// reportPerKey reports the timed time per key (ns/key, the unit the dump
// benchmarks use and the report reads) and keys per second.
func reportPerKey(b *testing.B, keys int) {
	ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N*keys)
	b.ReportMetric(ns, "ns/key")
	if ns > 0 {
		b.ReportMetric(1e9/ns, "keys/s")
	}
}

// migrateFixture returns the root of the pristine fleet in layout "legacy"
// (10,000 key dirs written by legacySeed, as the dump fixture's) or "db"
// (a copy of the legacy one converted by migrate.ToDB); see fixture.
// Nothing ever migrates a fixture in place: the benchmarks convert copies.
func migrateFixture(b *testing.B, layout string) string {
	var legacyRoot string
	if layout == "db" {
		legacyRoot = migrateFixture(b, "legacy") // built first, with its own timer stop
	}
	return fixture(b, fmt.Sprintf("migrate-%s-%dKiB", layout, migrateTranscript>>10), func(root string) {
		if layout == "legacy" {
			data := Transcript(migrateTranscript)
			for i := 0; i < migrateKeys; i++ {
				if err := legacySeed(filepath.Join(root, benchKey(i)), data, piVersion, venue, 3, "12345 200000 "+model); err != nil {
					b.Fatal(err)
				}
			}
			return
		}
		cloneFleet(b, legacyRoot, root)
		sum, err := migrate.ToDB(root, migrate.Options{Workers: 2}, func(migrate.Report) error { return nil })
		if err != nil || sum.Migrated != migrateKeys || !sum.Complete() {
			b.Fatalf("migrating the db fixture: %+v, %v", sum, err)
		}
	})
}

// cloneFleet copies the sessions root src (key dirs of regular files) to
// dst, which must not exist: new directories and new files, no hard link
// (a migration of the copy must not touch the original), holes kept
// (CopySparse: a meta.db copied densely would take blocks the real one
// does not), modes and file mtimes kept (ToDB takes the transcript's mtime
// as its last promotion time). Two goroutines, one for each half of the
// names.
func cloneFleet(tb testing.TB, src, dst string) {
	tb.Helper()
	ents, err := os.ReadDir(src)
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.Mkdir(dst, 0o700); err != nil {
		tb.Fatal(err)
	}
	const workers = 2
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		part := ents[w*len(ents)/workers : (w+1)*len(ents)/workers]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, e := range part {
				if errs[w] = cloneKeyDir(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())); errs[w] != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			tb.Fatal(err)
		}
	}
}

func cloneKeyDir(src, dst string) error {
	st, err := os.Lstat(src)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%s: not a directory", src)
	}
	if err := os.Mkdir(dst, st.Mode().Perm()); err != nil {
		return err
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil {
			return err
		}
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("%s/%s: not a regular file", src, e.Name())
		}
		p := filepath.Join(dst, e.Name())
		if err := CopySparse(filepath.Join(src, e.Name()), p, fi.Mode().Perm()); err != nil {
			return err
		}
		if err := os.Chtimes(p, fi.ModTime(), fi.ModTime()); err != nil {
			return err
		}
	}
	return nil
}

// fleetDisk is what a sessions root's key dirs take on disk
// (st_blocks*512, links not followed): all of it (each key dir itself and
// every entry in it), and meta, everything but the transcripts and the
// directories (the legacy sidecars, or meta.db).
type fleetDisk struct{ all, meta int64 }

func diskOfFleet(tb testing.TB, root string) fleetDisk {
	tb.Helper()
	var d fleetDisk
	keys, err := os.ReadDir(root)
	if err != nil {
		tb.Fatal(err)
	}
	var st unix.Stat_t
	for _, k := range keys {
		kd := filepath.Join(root, k.Name())
		if err := unix.Lstat(kd, &st); err != nil {
			tb.Fatal(err)
		}
		d.all += st.Blocks * 512
		ents, err := os.ReadDir(kd)
		if err != nil {
			tb.Fatal(err)
		}
		for _, e := range ents {
			if err := unix.Lstat(filepath.Join(kd, e.Name()), &st); err != nil {
				tb.Fatal(err)
			}
			d.all += st.Blocks * 512
			if e.Name() != store.TranscriptName && st.Mode&unix.S_IFMT != unix.S_IFDIR {
				d.meta += st.Blocks * 512
			}
		}
	}
	return d
}

func (d fleetDisk) report(b *testing.B, when string, keys int) {
	b.ReportMetric(float64(d.all)/float64(keys), when+"-B/key")
	b.ReportMetric(float64(d.meta)/float64(keys), when+"-meta-B/key")
}

// TestCloneFleet checks, on three keys, that a copy made by cloneFleet is
// what migrate converts and that converting it leaves the original as it
// was: same names, bytes, modes and mtimes, and no hard link between them.
func TestCloneFleet(t *testing.T) {
	src := filepath.Join(t.TempDir(), "src")
	mtime := time.Date(2026, 11, 1, 12, 0, 0, 123456789, time.UTC)
	for i := 0; i < 3; i++ {
		kd := filepath.Join(src, benchKey(i))
		if err := legacySeed(kd, Transcript(4<<10), piVersion, venue, 3, "12345 200000 "+model); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(filepath.Join(kd, store.TranscriptName), mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	dst := filepath.Join(t.TempDir(), "dst")
	cloneFleet(t, src, dst)
	state := func(root string) map[string]string {
		m := map[string]string{}
		err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err != nil || p == root {
				return err
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			m[rel] = fi.Mode().String()
			if fi.Mode().IsRegular() {
				data, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				m[rel] += fmt.Sprintf(" %d %x %s", fi.Sys().(*syscall.Stat_t).Nlink, crc32.ChecksumIEEE(data), fi.ModTime().UTC().Format(time.RFC3339Nano))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	before := state(src)
	if got := state(dst); !maps.Equal(got, before) || len(got) != 3*6 {
		t.Fatalf("clone differs:\n%v\nfrom the original:\n%v", got, before)
	}
	if d := diskOfFleet(t, src); d.all <= 0 || d.meta <= 0 || d.meta >= d.all {
		t.Errorf("diskOfFleet: %+v", d)
	}
	sum, err := migrate.ToDB(dst, migrate.Options{}, func(migrate.Report) error { return nil })
	if err != nil || sum.Migrated != 3 || !sum.Complete() {
		t.Fatalf("ToDB of the clone: %+v, %v", sum, err)
	}
	if got := state(src); !maps.Equal(got, before) {
		t.Errorf("migrating the clone changed the original:\n%v\nwas:\n%v", got, before)
	}
}
