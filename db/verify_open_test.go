package db

import (
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// A writer reads every record before it writes anything (verify), so that
// it never commits into a file that readers refuse: a sidecar, a history
// entry or meta/created that does not decode stops its open, as it stops a
// reader's, and nothing is written. (A writer that went on would
// acknowledge a promotion into a file every later resolve refuses.)
func TestAWriterRefusesAtOpenARecordReadersRefuse(t *testing.T) {
	cases := map[string]struct {
		name   string
		damage func(tx *bolt.Tx) error
	}{
		"sidecar": {bucketSidecars + "/" + keyVenue, func(tx *bolt.Tx) error {
			return tx.Bucket([]byte(bucketSidecars)).Put([]byte(keyVenue), []byte{0xc0})
		}},
		"history entry": {bucketHistory + "/", func(tx *bolt.Tx) error {
			c := tx.Bucket([]byte(bucketHistory)).Cursor()
			k, _ := c.Last()
			return tx.Bucket([]byte(bucketHistory)).Put(k, []byte{0xc1})
		}},
		"created": {bucketMeta + "/" + keyCreated, func(tx *bolt.Tx) error {
			return tx.Bucket([]byte(bucketMeta)).Put([]byte(keyCreated), []byte{0xa1, '1'})
		}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			kd := makeDB(t, 2)
			bdb, err := bolt.Open(kd.db, 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			err = bdb.Update(c.damage)
			bdb.Close()
			if err != nil {
				t.Fatal(err)
			}
			before := dirState(t, kd)
			was := readFile(t, kd.db)
			// A reader refuses the record when it reads it.
			err = readAllOnce(kd, func(Sidecars, []HistoryEntry) {})
			wantErr(t, err, ErrDamaged)
			if !strings.Contains(err.Error(), c.name) {
				t.Errorf("a reader: %v does not name %s", err, c.name)
			}
			d, err := OpenWriter(kd.dir, kd.db, testOpts)
			if err == nil {
				cerr := d.Update(func(tx *Tx) error { return tx.PutTranscript(Transcript{Gen: 9}) })
				d.Close()
				t.Fatalf("the writer opened a file readers refuse; its commit: %v", cerr)
			}
			wantErr(t, err, ErrDamaged)
			if !strings.Contains(err.Error(), c.name) {
				t.Errorf("the writer: %v does not name %s", err, c.name)
			}
			if after := dirState(t, kd); after != before || string(readFile(t, kd.db)) != string(was) {
				t.Errorf("a damaged file was written")
			}
		})
	}
}
