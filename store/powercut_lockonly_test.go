package store

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/durable/dbseam"
	"sessdb/internal/durable/powercut"
	"sessdb/internal/faults"
	"sessdb/internal/fsat"
	"sessdb/store/transcript"
)

// The meta.db a writer makes for the lock alone in a legacy key (check
// --repair removing a temp, quarantine, a refused first promotion; reap
// and accept alike) is unlinked again under that lock, and the unlink is
// made durable: once the operation has returned, a power cut does not
// bring the empty file back (as a kill between the create and the unlink
// does: an empty meta.db vouches for nothing, and no verdict changes). The
// unlink went through the durability seam with no fsync of the key dir
// after it, so the journal put the file back.
func TestALockOnlyMetaDBStaysGoneAfterAPowerCut(t *testing.T) {
	for _, c := range []struct {
		name string
		run  func(t *testing.T, s *Store, root, key string) string // the dir the lock's meta.db was in
	}{
		{"check --repair of a legacy key's temp", func(t *testing.T, s *Store, root, key string) string {
			chkOldFile(t, filepath.Join(root, key, ".current.jsonl.tmp-00000000000000cc"), s.opts.Now())
			for _, f := range checkFindings(t, s, CheckOptions{Repair: true, Workers: 1}) {
				if f.Kind == KindStrayTemp && !f.Repaired {
					t.Fatalf("the repair left %+v", f)
				}
			}
			return key
		}},
		{"a refused first promotion of a legacy key", func(t *testing.T, s *Store, root, key string) string {
			sess, _ := mustResolve(t, s, key, localJob())
			if res := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi, Require: transcript.Answered}); res.Promoted || res.Reason != gates.RunIncomplete {
				t.Fatalf("promote = %+v, want refused run-incomplete", res)
			}
			return key
		}},
		{"quarantine of a legacy key", func(t *testing.T, s *Store, root, key string) string {
			aside, err := s.Quarantine(key)
			if err != nil {
				t.Fatal(err)
			}
			return aside
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, root, clock := newTestStore(t, gates.Bounds{})
			key := Key("github", "a/b", "legacy")
			writeLegacy(t, root, key, map[string]string{TranscriptName: string(transcriptBytes(clock.now, entryLine("legacy"))), "pi-version": testPi})
			j := powercut.New()
			s.disk = diskWrites{j}
			dir := c.run(t, s, root, key)
			if _, err := os.Lstat(filepath.Join(root, dir, db.FileName)); !os.IsNotExist(err) {
				t.Fatalf("%s/meta.db after the run: %v; want it removed", dir, err)
			}
			imgs := j.Images(t, root)
			if len(imgs) == 0 {
				t.Fatal("no image")
			}
			for _, img := range imgs {
				if _, err := os.Lstat(filepath.Join(img.Dir, dir, db.FileName)); !os.IsNotExist(err) {
					t.Fatalf("a power cut once it returned (%s, lost %v) brings back %s/meta.db (%v)", img.Mode, img.Lost, dir, err)
				}
			}
		})
	}
}

// A reap of an expired legacy key makes meta.db there for its lock; when
// check --quarantine moved the key dir aside meanwhile (a rename and the
// root's fsync), the reap leaves the dir moved aside as the quarantine
// left it, and takes away the meta.db it made there, durably: a power cut
// once the reap returned does not bring it back into the quarantine dir.
// (The unlink bypassed the seam, and the journal could not book what is
// done in a dir moved: no test held its fsync.)
func TestAMetaDBAReapMadeInADirMovedAsideStaysGoneAfterAPowerCut(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{TTL: opsTTL})
	key := Key("github", "a/b", "legacy")
	old := clock.now.Add(-30 * 24 * time.Hour)
	writeLegacy(t, root, key, map[string]string{TranscriptName: string(transcriptBytes(old))})
	if err := os.Chtimes(filepath.Join(root, key, TranscriptName), old, old); err != nil {
		t.Fatal(err)
	}
	j := powercut.New()
	s.disk = diskWrites{j}
	dbseam.Set(j)
	t.Cleanup(func() { dbseam.Set(nil) })
	rd, err := fsat.OpenDir(root)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	aside := QuarantinePrefix + key + "-20261101T120000Z"
	made := false
	t.Cleanup(func() { faults.Set(nil) })
	faults.Set(func(p faults.Point) error {
		if p != faults.DBOpenBeforeLock || made {
			return nil
		}
		if _, err := os.Lstat(filepath.Join(root, key, db.FileName)); err != nil {
			return err
		}
		made = true
		if err := j.Rename(rd, key, aside); err != nil {
			return err
		}
		return j.SyncDir(rd)
	})
	res, err := s.ReapWith(context.Background(), ReapOptions{Workers: 1})
	faults.Set(nil)
	dbseam.Set(nil)
	if err != nil || !made || len(res.Removed) != 0 {
		t.Fatalf("the reap = %+v, %v (meta.db made before the move: %v); want the key not removed", res, err, made)
	}
	if _, err := os.Lstat(filepath.Join(root, aside, db.FileName)); !os.IsNotExist(err) {
		t.Fatalf("the meta.db the reap made is still in the dir moved aside: %v", err)
	}
	for _, img := range j.Images(t, root) {
		if _, err := os.Lstat(filepath.Join(img.Dir, aside, db.FileName)); !os.IsNotExist(err) {
			t.Errorf("a power cut once the reap returned (%s, lost %v) brings back %s/meta.db (%v)", img.Mode, img.Lost, aside, err)
		}
	}
}
