package migrate

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"

	"sessdb/db"
	"sessdb/internal/faults"
	"sessdb/internal/fsat"
	"sessdb/store"
)

// TestQuarantineWhileAMigrationWaits with a meta.db of an older schema
// (1): the migration that waited for the quarantine's lock must leave the
// dir moved aside as it was, meta.db byte for byte, not migrate its schema
// there (the open's own commit, before the migration saw the dir moved).
func TestQuarantineOfAnOlderSchemaWhileAMigrationWaits(t *testing.T) {
	for _, back := range []bool{false, true} {
		root, key := oneKey(t)
		if back {
			migrate(t, root, false, testOpts())
		}
		dir := filepath.Join(root, key)
		if _, hadDB := dbValues(t, dir); !hadDB {
			// The lock file an older sessdb's killed promotion left.
			kd, err := fsat.OpenDir(dir)
			must(t, err)
			d, err := db.OpenWriter(kd, filepath.Join(dir, db.FileName), db.Options{})
			must(t, err)
			must(t, d.Close())
			kd.Close()
		}
		bdb, err := bolt.Open(filepath.Join(dir, db.FileName), 0o600, nil)
		must(t, err)
		must(t, bdb.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte("meta")).Put([]byte("schema"), []byte{0x01}) }))
		must(t, bdb.Close())

		kd, err := fsat.OpenDir(dir)
		must(t, err)
		lock, err := db.OpenReader(kd, filepath.Join(dir, db.FileName), db.Options{})
		must(t, err)
		done := make(chan map[string]Report, 1)
		go func() {
			got := map[string]Report{}
			if _, err := run(context.Background(), root, map[bool]conversion{false: toDB, true: toLegacy}[back], testOpts(), func(r Report) error { got[r.Key] = r; return nil }); err != nil {
				t.Errorf("migrate: %v", err)
			}
			done <- got
		}()
		waitInStack(t, "sessdb/db.lockKey") // the migration waits for the lock
		aside := filepath.Join(root, store.QuarantinePrefix+key+"-20261101T120000Z")
		must(t, os.Rename(dir, aside))
		tree := treeState(t, aside, true, true)
		must(t, lock.Close())
		got := <-done
		kd.Close()
		if r := got[key]; r.Action != Skipped || r.Cause != vanishedCause {
			t.Errorf("%s: %+v, want skip, vanished", direction(back), r)
		}
		if d := diffStates(tree, treeState(t, aside, true, true)); d != "" {
			t.Errorf("%s: the quarantine dir changed:\n%s", direction(back), d)
		}
	}
}

// waitInStack waits until some goroutine's stack shows fn.
func waitInStack(t *testing.T, fn string) {
	t.Helper()
	buf := make([]byte, 1<<20)
	for deadline := time.Now().Add(5 * time.Second); !bytes.Contains(buf[:runtime.Stack(buf, true)], []byte(fn)); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no goroutine reached %s", fn)
		}
	}
}

// The key dir swapped inside the migration's meta.db open (between the
// key dir's fstat and meta.db's openat; between that and the flock): B,
// another dir, put at the key's name, A moved off the root. One way, the
// key is skipped, vanished, and neither A nor B changes: A's dir's mtime
// included where the swap came before the open made a meta.db for its
// lock (it makes none in a dir moved aside, not even for a moment); after
// it made one at the key's name, the migration takes it away again. A,B,A
// before the flock: A is migrated as if nothing happened (to legacy; a
// migration to meta.db of a key without one meets the swap before its
// create, and refuses there).
func TestKeyDirSwapInsideTheMigrationsMetaOpen(t *testing.T) {
	type swapCase struct {
		name       string
		swap, swBk faults.Point
		dirMtime   bool // A's own mtime is kept
	}
	for _, back := range []bool{false, true} {
		cases := []swapCase{
			{"before-meta", faults.DBOpenBeforeMeta, "", true},
			{"before-flock", faults.DBOpenBeforeLock, "", back},
		}
		if back {
			cases = append(cases, swapCase{"A,B,A", faults.DBOpenBeforeMeta, faults.DBOpenBeforeLock, true})
		}
		for _, c := range cases {
			t.Run(direction(back)+"/"+c.name, func(t *testing.T) {
				root, key := oneKey(t)
				if back {
					migrate(t, root, false, testOpts())
				}
				dir := filepath.Join(root, key)
				aside := filepath.Join(t.TempDir(), "a") // off the root: no entry of the run
				b := filepath.Join(t.TempDir(), "b")
				must(t, os.Mkdir(b, 0o700))
				must(t, os.WriteFile(filepath.Join(b, "b-marker"), []byte("B"), 0o600))
				aTree, bTree := treeState(t, dir, true, true), treeState(t, b, true, true)
				var did []faults.Point
				faults.Set(func(p faults.Point) error {
					switch {
					case p == c.swap && len(did) == 0:
						must(t, os.Rename(dir, aside))
						must(t, os.Rename(b, dir))
						did = append(did, p)
					case p == c.swBk && len(did) == 1:
						must(t, os.Rename(dir, b))
						must(t, os.Rename(aside, dir))
						did = append(did, p)
					}
					return nil
				})
				got, _ := migrate(t, root, back, testOpts())
				faults.Set(nil)
				if wantSwaps := map[bool]int{false: 1, true: 2}[c.swBk != ""]; len(did) != wantSwaps {
					t.Fatalf("swaps done at %v", did)
				}
				r := got[key]
				if c.swBk != "" {
					if r.Action != Migrated {
						t.Fatalf("%+v; want migrated after A,B,A", r)
					}
					if _, ok := dbValues(t, dir); ok {
						t.Fatal("meta.db is still there after the rollback")
					}
					return
				}
				if r.Action != Skipped || r.Cause != vanishedCause {
					t.Fatalf("%+v; want skip, vanished", r)
				}
				aAfter := treeState(t, aside, true, true)
				if !c.dirMtime {
					delete(aTree, ".")
					delete(aAfter, ".")
				}
				if d := diffStates(aTree, aAfter); d != "" {
					t.Errorf("A changed:\n%s", d)
				}
				if d := diffStates(bTree, treeState(t, dir, true, true)); d != "" {
					t.Errorf("B changed:\n%s", d)
				}
			})
		}
	}
}

// meta.db replaced inside a rollback's open of it (db-open/before-flock):
// by a link, a FIFO, a directory, a truncated copy; unlinked. The run
// reports the key with a cause within its lock timeout, nothing is written
// through the link, the meta.db replaced (held open here) is unchanged,
// and no legacy file is written from it: the key's files are the ones
// before the run, or the rollback of what is at meta.db's name now.
func TestMetaDBSwapInsideARollbacksOpen(t *testing.T) {
	for _, sw := range []struct {
		name string
		do   func(t *testing.T, meta, saved string)
		want Action
	}{
		{"link", func(t *testing.T, meta, saved string) {
			must(t, os.Remove(meta))
			must(t, os.Symlink(saved, meta))
		}, Failed},
		{"fifo", func(t *testing.T, meta, _ string) {
			must(t, os.Remove(meta))
			must(t, unix.Mkfifo(meta, 0o600))
		}, Failed},
		{"directory", func(t *testing.T, meta, _ string) {
			must(t, os.Remove(meta))
			must(t, os.Mkdir(meta, 0o700))
		}, Failed},
		{"truncated copy", func(t *testing.T, meta, saved string) {
			b, err := os.ReadFile(saved)
			must(t, err)
			must(t, os.WriteFile(meta+".new", b[:3*1024], 0o600))
			must(t, os.Rename(meta+".new", meta))
		}, Failed},
		{"unlinked", func(t *testing.T, meta, _ string) {
			must(t, os.Remove(meta))
		}, Already},
	} {
		t.Run(sw.name, func(t *testing.T) {
			root, key := oneKey(t)
			migrate(t, root, false, testOpts())
			dir := filepath.Join(root, key)
			meta := filepath.Join(dir, db.FileName)
			saved := filepath.Join(t.TempDir(), "saved-meta.db")
			was, err := os.ReadFile(meta)
			must(t, err)
			must(t, os.WriteFile(saved, was, 0o600))
			held, err := os.Open(meta)
			must(t, err)
			defer held.Close()
			files := map[string][]byte{}
			ents, err := os.ReadDir(dir)
			must(t, err)
			for _, e := range ents {
				if e.Name() != db.FileName {
					b, err := os.ReadFile(filepath.Join(dir, e.Name()))
					must(t, err)
					files[e.Name()] = b
				}
			}
			done := false
			faults.Set(func(p faults.Point) error {
				if p == faults.DBOpenBeforeLock && !done {
					done = true
					sw.do(t, meta, saved)
				}
				return nil
			})
			start := time.Now()
			got, _ := migrate(t, root, true, testOpts())
			faults.Set(nil)
			if !done {
				t.Fatal("no open reached db-open/before-flock")
			}
			if took := time.Since(start); took > DefaultLockTimeout {
				t.Fatalf("the rollback took %v", took)
			}
			if r := got[key]; r.Action != sw.want || r.Action == Failed && r.Cause == "" {
				t.Fatalf("%+v; want %s with a cause", r, sw.want)
			}
			if b, _ := os.ReadFile(saved); !bytes.Equal(b, was) {
				t.Fatal("written through the link at meta.db")
			}
			now := make([]byte, len(was)+1)
			if n, _ := held.ReadAt(now, 0); !bytes.Equal(now[:n], was) {
				t.Fatal("the meta.db replaced in the open changed")
			}
			for name, b := range files {
				if now, err := os.ReadFile(filepath.Join(dir, name)); err != nil || !bytes.Equal(now, b) {
					t.Errorf("%s changed (%v)", name, err)
				}
			}
			if ents, _ := os.ReadDir(dir); len(ents) > len(files)+1 {
				t.Errorf("the key dir holds %v; it held %d files and meta.db", ents, len(files))
			}
		})
	}
}
