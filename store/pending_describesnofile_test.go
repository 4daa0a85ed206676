package store

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"
	bolt "go.etcd.io/bbolt"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/faults"
)

// A pending promotion's record that describes no transcript (generation
// 0, a negative size, a CRC32C wider than 32 bits: put by hand, no sessdb
// writes one) is damage, as a transcript record of the same is: resolve
// is meta-unreadable and a promotion onto the key fails, the committed
// run's temp left where it is. Before, no temp could match it, so the
// temp was taken for a stray: a resolve served the generation before,
// and the next promotion went on over it and swept the committed run.
func TestAPendingRecordDescribingNoTranscriptIsDamage(t *testing.T) {
	for name, edit := range map[string]func(p *db.Pending){
		"generation 0":    func(p *db.Pending) { p.Gen = 0 },
		"a wide CRC32C":   func(p *db.Pending) { p.CRC32C |= 1 << 32 },
		"a negative size": func(p *db.Pending) { p.Size = -1 },
	} {
		s, root, _ := newTestStore(t, gates.Bounds{})
		key := chkKey(t, s, "pending")
		sess, jobDir := mustResolve(t, s, key, localJob())
		stage(t, jobDir, append(staged(t, jobDir), entryLine("committed, not in place")...))
		faults.Set(func(p faults.Point) error {
			if p == faults.PromoteAfterCommit {
				return errors.New("stopped after the commit by the test")
			}
			return nil
		})
		res, err := s.Promote(sess, PromoteRequest{PiVersion: testPi})
		faults.Set(nil)
		if err == nil || res.Reason != gates.PromoteFailed {
			t.Fatalf("%s: the promotion stopped after its commit = %+v, %v", name, res, err)
		}
		temps, _ := filepath.Glob(filepath.Join(root, key, ".current.jsonl.tmp-*"))
		if len(temps) != 1 {
			t.Fatalf("%s: %d temps, want the committed run's", name, len(temps))
		}
		bdb, err := bolt.Open(filepath.Join(root, key, db.FileName), 0o600, &bolt.Options{Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		err = bdb.Update(func(tx *bolt.Tx) error {
			b := tx.Bucket([]byte("sidecars"))
			var p db.Pending
			if err := msgpack.Unmarshal(b.Get([]byte("pending")), &p); err != nil {
				return err
			}
			edit(&p)
			v, err := msgpack.Marshal(&p)
			if err != nil {
				return err
			}
			return b.Put([]byte("pending"), v)
		})
		bdb.Close()
		if err != nil {
			t.Fatal(err)
		}
		cold, jd := mustResolve(t, s, key, localJob())
		if cold.Resume || cold.Reason != gates.MetaUnreadable {
			t.Fatalf("%s: resolve = {resume %v, %s, gen %d}, want meta-unreadable", name, cold.Resume, cold.Reason, cold.Gen())
		}
		stage(t, jd, transcriptBytes(time.Now(), entryLine("a cold run")))
		if res, err := s.Promote(cold, PromoteRequest{PiVersion: testPi}); err == nil || res.Promoted || res.Reason != gates.PromoteFailed {
			t.Fatalf("%s: the cold job's promote = %+v, %v; want promote-failed, the key never written over", name, res, err)
		}
		if _, err := os.Stat(temps[0]); err != nil {
			t.Fatalf("%s: the committed run's temp: %v", name, err)
		}
	}
}
