package store

import (
	"os"
	"path/filepath"
	"testing"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/durable/powercut"
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
