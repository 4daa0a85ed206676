package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"sessdb/store"
)

// dumpKeys is how many key dirs each dump walks.
const dumpKeys = 10000

// dumpHistory is what `sessdb dump` shows by default.
const dumpHistory = 3

// dumpTranscript is the size of every fixture transcript. Both walks read
// only its first line; it is well past the kernel's initial readahead, so a
// cold first-line read costs what it would for a longer transcript.
const dumpTranscript = 64 << 10

// BenchmarkDump walks 10,000 key dirs under one root: what `sessdb dump`
// runs (store.InspectWith, the CLI's default of 3 history entries) over db
// key dirs, each meta.db left by 100 promotions so its history ring is
// full, against the legacy dump walk over legacy key dirs (lstat the
// transcript, read its first line, read the four sidecars). Reported per
// key: ns/key.
//
// Workers: InspectWith's Workers option for sessdb (it reads keys on that
// many goroutines and delivers them in name order); for the legacy walk,
// the sorted names split into that many runs walked at the same time.
//
// Cold runs evict every fixture file's pages (DropCache, fadvise) before
// each walk, outside the timer, and check that a sample really left the
// page cache; dentries and inodes stay cached (see DropCache).
func BenchmarkDump(b *testing.B) {
	for _, cold := range []bool{false, true} {
		for _, workers := range []int{1, 2} {
			for _, impl := range []string{"sessdb", "legacy"} {
				cache := "warm"
				if cold {
					cache = "cold"
				}
				name := fmt.Sprintf("%s/%dw/%s", cache, workers, impl)
				b.Run(name, func(b *testing.B) {
					root := dumpFixture(b, impl)
					walk := walkSessdb
					if impl == "legacy" {
						walk = walkLegacy
					}
					if !cold {
						walk(b, root, workers) // the first walk warms the cache
					}
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						if cold {
							b.StopTimer()
							evict(b, root)
							b.StartTimer()
						}
						walk(b, root, workers)
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*dumpKeys), "ns/key")
				})
			}
		}
	}
}

func walkSessdb(b *testing.B, root string, workers int) {
	s, err := store.New(root, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	err = s.InspectWith(context.Background(), store.InspectOptions{History: dumpHistory, Workers: workers}, func(r store.KeyReport) error {
		n++
		if r.Problem != "" || r.Layout != store.LayoutDB || r.Transcript == nil || !r.Transcript.HeaderOK || len(r.History) != dumpHistory {
			return fmt.Errorf("key %s: not a healthy db key: %+v", r.Name, r)
		}
		return nil
	})
	if err != nil || n != dumpKeys {
		b.Fatalf("walked %d keys, want %d: %v", n, dumpKeys, err)
	}
}

func walkLegacy(b *testing.B, root string, workers int) {
	var n atomic.Int64
	var bad atomic.Pointer[KeyInfo]
	err := legacyWalk(root, workers, func(k KeyInfo) {
		n.Add(1)
		if !k.HeaderOK || !k.HasSidecar[0] || !k.HasSidecar[3] {
			bad.Store(&k)
		}
	})
	if err != nil || n.Load() != dumpKeys || bad.Load() != nil {
		b.Fatalf("walked %d keys, want %d: %v (unhealthy: %+v)", n.Load(), dumpKeys, err, bad.Load())
	}
}

// evict drops the fixture from the page cache and checks a sample.
func evict(b *testing.B, root string) {
	if _, err := DropCache(root); errors.Is(err, errors.ErrUnsupported) {
		b.Skip(err) // a cold run cannot be made here (see DropCache)
	} else if err != nil {
		b.Fatal(err)
	}
	names, err := os.ReadDir(root)
	if err != nil || len(names) == 0 {
		b.Fatalf("read %s: %v", root, err)
	}
	for _, i := range []int{0, len(names) / 2, len(names) - 1} {
		kd := filepath.Join(root, names[i].Name())
		files, _ := os.ReadDir(kd)
		for _, f := range files {
			if res, _, err := Resident(filepath.Join(kd, f.Name())); err != nil || res > 0 {
				b.Fatalf("%s/%s: %d pages still cached after DropCache (%v)", kd, f.Name(), res, err)
			}
		}
	}
}

// dumpFixture returns the root of impl's fixture (see fixture): sessdb key
// dirs get the transcript and a copy of a meta.db left by 100 real
// promotions; legacy key dirs get the transcript and the four sidecars.
func dumpFixture(b *testing.B, impl string) string {
	return fixture(b, "dump-"+impl, func(root string) {
		data := Transcript(dumpTranscript)
		var tmplDB string
		if impl == "sessdb" {
			tmpl := filepath.Join(workDir(b), "sessions")
			promoteN(b, newStore(b, tmpl), benchKey(0), data, 100)
			tmplDB = filepath.Join(tmpl, benchKey(0), "meta.db")
		}
		for i := 0; i < dumpKeys; i++ {
			kd := filepath.Join(root, benchKey(i))
			var err error
			if impl == "sessdb" {
				err = os.MkdirAll(kd, 0o700)
				if err == nil {
					err = os.WriteFile(filepath.Join(kd, store.TranscriptName), data, 0o600)
				}
				if err == nil {
					err = CopySparse(tmplDB, filepath.Join(kd, "meta.db"), 0o600)
				}
			} else {
				err = legacySeed(kd, data, piVersion, venue, 3, "12345 200000 "+model)
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}
