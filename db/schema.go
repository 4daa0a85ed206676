package db

import (
	"fmt"
)

// FileName is the name of the bbolt file inside a key directory.
const FileName = "meta.db"

// TempPrefix starts the name of a meta.db under construction. A crash during
// creation can leave one behind; it is never linked into place after that,
// so whoever sweeps stray temporary files may remove it.
const TempPrefix = "." + FileName + ".tmp-"

// SchemaVersion is the schema version this binary writes and fully knows.
const SchemaVersion = 2

// PageSize is the bbolt page size of every meta.db this package creates.
// A key's metadata is a few hundred bytes plus the history ring, so the
// OS page size (4 KiB) leaves most of each page empty, and copy-on-write
// doubles whatever a commit touches: with 4 KiB pages a key took 48-52 KiB
// on disk after 100 promotions, with 1 KiB pages 20 KiB
// (internal/bench BenchmarkDiskPerKey). 1 KiB is the smallest size at which
// bbolt still finds the second meta page when the first is damaged: it
// probes for it from offset 1024 upwards. Existing files keep the page size
// they were created with.
const PageSize = 1024

// HistoryLimit is how many entries the history/ ring keeps.
const HistoryLimit = 64

// Bucket and key names; the tree in doc.go draws them.
const (
	bucketMeta = "meta"
	keySchema  = "schema"
	keyCreated = "created"

	bucketSidecars = "sidecars"
	keyTranscript  = "transcript"
	keyPiVersion   = "pi-version"
	keyVenue       = "venue"
	keyResumeChain = "resume-chain"
	keyContext     = "context"
	keyPending     = "pending"

	bucketHistory = "history"
)

// buckets lists every top-level bucket with the schema version that
// introduced it. A reader of an older file needs to know which absences are
// damage and which only mean the file predates the bucket.
var buckets = []struct {
	name  string
	since uint64
}{
	{bucketMeta, 1},
	{bucketSidecars, 1},
	{bucketHistory, 1},
}

func bucketSince(name string) uint64 {
	for _, b := range buckets {
		if b.name == name {
			return b.since
		}
	}
	// Only the package's own constants reach here, so this is a typo in
	// this package, which any test that opens a file trips over at once;
	// no file's content can cause it.
	panic("db: unknown bucket " + name)
}

// readMeta reads meta/ from the root of a transaction. A file with nothing
// at all in its root is schema 0: bbolt initialised it and no migration has
// run. Anything else without a decodable meta/ is not a file this package
// wrote. A schema newer than known is ErrNewerSchema.
func readMeta(root rootView, known uint64) (Meta, error) {
	b := root.bucket(bucketMeta)
	if b == nil {
		if root.empty() {
			return Meta{}, nil
		}
		return Meta{}, damaged("no %s/ bucket", bucketMeta)
	}
	var m Meta
	v := b.Get([]byte(keySchema))
	if v == nil {
		return Meta{}, damaged("no %s/%s", bucketMeta, keySchema)
	}
	var err error
	if m.Schema, err = decodeUint(v); err != nil {
		return Meta{}, damagedBy(bucketMeta+"/"+keySchema, err)
	}
	if m.Schema == 0 {
		// Version 0 means an empty root; a meta/ bucket claiming it is lying.
		return Meta{}, damaged("%s/%s is 0", bucketMeta, keySchema)
	}
	if m.Schema > known {
		// Newer records may mean anything; do not try to decode them.
		return m, fmt.Errorf("%w: file has schema %d, this binary knows %d", ErrNewerSchema, m.Schema, known)
	}
	v = b.Get([]byte(keyCreated))
	if v == nil {
		return Meta{}, damaged("no %s/%s", bucketMeta, keyCreated)
	}
	if m.Created, err = decodeInt(v); err != nil {
		return Meta{}, damagedBy(bucketMeta+"/"+keyCreated, err)
	}
	return m, nil
}

// checkBuckets reports a bucket that the file's schema version promises but
// the file lacks.
func checkBuckets(root rootView, schema uint64) error {
	for _, b := range buckets {
		if b.since <= schema && root.bucket(b.name) == nil {
			return damaged("schema %d file has no %s/ bucket", schema, b.name)
		}
	}
	return nil
}

// verify reads the whole file the way readers read it: meta/, the buckets
// its schema promises, every sidecar and every history entry, and returns
// the first reason a reader would refuse it. A writer runs it before it
// writes anything, so that it never commits into a file a reader refuses.
func verify(root rootView) (Meta, error) { return verifyRecords(root, true) }

// verifyRecords is verify, the history read only where history is true:
// a writer's open for DropUndecodableHistory, whose commit removes the
// entries a reader would refuse (Options.UndecodableHistory).
func verifyRecords(root rootView, history bool) (Meta, error) {
	m, err := readMeta(root, SchemaVersion)
	if err != nil {
		return m, err
	}
	if err := checkBuckets(root, m.Schema); err != nil {
		return m, err
	}
	if b := root.bucket(bucketSidecars); b != nil {
		if _, err := readSidecars(b); err != nil {
			return m, err
		}
	}
	if b := root.bucket(bucketHistory); b != nil && history {
		if _, err := readHistory(b, 0); err != nil {
			return m, err
		}
	}
	return m, nil
}
