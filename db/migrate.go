package db

import (
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// migration is one schema step. The step may assume the file is exactly at
// version-1; it must not write meta/schema, which migrate bumps once after
// the last step.
type migration struct {
	version uint64 // the schema version the step produces
	migrate func(tx *bolt.Tx, now time.Time) error
}

// migrations is ordered by version, one step per version from 1 up to
// SchemaVersion. Every step needs a case in TestMigrations; the test counts.
var migrations = []migration{
	{version: 1, migrate: createV1},
	{version: 2, migrate: jobContractV2},
}

// createV1 turns the empty file bbolt initialises into schema 1.
func createV1(tx *bolt.Tx, now time.Time) error {
	for _, b := range buckets {
		if b.since != 1 {
			continue
		}
		// CreateBucket, not CreateBucketIfNotExists: a schema 0 file has an
		// empty root, so a bucket already there means the file is not what
		// its version says.
		if _, err := tx.CreateBucket([]byte(b.name)); err != nil {
			return fmt.Errorf("create %s/: %w", b.name, err)
		}
	}
	return tx.Bucket([]byte(bucketMeta)).Put([]byte(keyCreated), encodeInt(RecordedAt(now)))
}

// jobContractV2 is schema 2, the job contract (issue 11): history/ keys
// become sequence numbers and entries gain g, o, k, u, x and bg (refused
// promotions are recorded too, and a retried ticket is found by its id);
// pending gains v, the identity it replaces. Nothing is rewritten: a schema
// 1 entry's key is its gen, which is a sequence already and which a decoder
// takes for the absent g, and every other new field is absent from old
// records and reads as its zero value, the default it documents. What the
// step changes is the version: a binary that knows only schema 1 refuses
// the file from now on (ErrNewerSchema) instead of dropping fields it
// cannot see.
func jobContractV2(*bolt.Tx, time.Time) error { return nil }

// migrate runs every step of steps newer than the file's version, then bumps
// meta/schema to the last step's version, all in tx: a failure anywhere
// leaves the file as it was. It returns errUpToDate when no step is pending,
// and ErrNewerSchema, before writing anything, when the file is newer than
// the steps know.
func migrate(tx *bolt.Tx, steps []migration, now time.Time) (Meta, error) {
	target := steps[len(steps)-1].version
	m, err := readMeta(boltRoot{tx}, target)
	if err != nil {
		return m, err
	}
	if err := checkBuckets(boltRoot{tx}, m.Schema); err != nil {
		return m, err
	}
	pending := 0
	for _, s := range steps {
		if s.version <= m.Schema {
			continue
		}
		if err := s.migrate(tx, now); err != nil {
			return m, fmt.Errorf("migrate schema %d to %d: %w", s.version-1, s.version, err)
		}
		pending++
	}
	if pending == 0 {
		return m, errUpToDate
	}
	if err := tx.Bucket([]byte(bucketMeta)).Put([]byte(keySchema), encodeUint(target)); err != nil {
		return m, fmt.Errorf("set %s/%s: %w", bucketMeta, keySchema, err)
	}
	return readMeta(boltRoot{tx}, target)
}
