package migrate

import (
	"fmt"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"

	"sessdb/db"
	"sessdb/internal/fsat"
)

// An empty meta.db of an older schema (the lock file a first promotion of
// an older sessdb left when it was killed) is the file the run found, not
// one its own open made, although the run's first write changes its
// change time (the schema migration; until 5bc548c, the open's): the run
// reports what its dry run planned, both ways.
func TestAnOlderEmptyMetaDBIsNotTheRunsOwn(t *testing.T) {
	for _, back := range []bool{false, true} {
		root, key := oneKey(t)
		dir := filepath.Join(root, key)
		kd, err := fsat.OpenDir(dir)
		must(t, err)
		d, err := db.OpenWriter(kd, filepath.Join(dir, db.FileName), db.Options{})
		must(t, err)
		must(t, d.Close())
		kd.Close()
		bdb, err := bolt.Open(filepath.Join(dir, db.FileName), 0o600, nil)
		must(t, err)
		must(t, bdb.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte("meta")).Put([]byte("schema"), []byte{0x01}) }))
		must(t, bdb.Close())

		dry := testOpts()
		dry.DryRun = true
		plan, _ := migrate(t, root, back, dry)
		got, _ := migrate(t, root, back, testOpts())
		p, r := plan[key], got[key]
		if p.Action != r.Action || fmt.Sprint(p.Removed) != fmt.Sprint(r.Removed) || fmt.Sprint(p.Oddities) != fmt.Sprint(r.Oddities) {
			t.Errorf("%s: the run reported %s, removed %v, oddities %v; its dry run planned %s, removed %v, oddities %v",
				direction(back), r.Action, r.Removed, r.Oddities, p.Action, p.Removed, p.Oddities)
		}
		if sc, ok := dbValues(t, dir); back == ok || !back && sc.Transcript == nil {
			t.Errorf("%s: meta.db after the run: %v, record %+v", direction(back), ok, sc)
		}
	}
}
