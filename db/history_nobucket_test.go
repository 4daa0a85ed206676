package db

import (
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// A file whose schema has history/ but which lacks the bucket is damage
// that the append names ("no history/ bucket"), not a bbolt panic on a nil
// bucket recovered as "bbolt panicked", which also poisons the handle.
func TestAppendHistoryWithoutItsBucketNamesIt(t *testing.T) {
	kd := newKeyDir(t)
	d := mustOpen(t, kd, true)
	if err := d.bdb.Update(func(tx *bolt.Tx) error { return tx.DeleteBucket([]byte(bucketHistory)) }); err != nil {
		t.Fatal(err)
	}
	err := d.Update(func(tx *Tx) error { return appended(tx.AppendHistory(HistoryEntry{Gen: 1})) })
	wantErr(t, err, ErrDamaged)
	if err == nil || !strings.Contains(err.Error(), "no "+bucketHistory+"/ bucket") {
		t.Errorf("append without history/: %v; want it named", err)
	}
}
