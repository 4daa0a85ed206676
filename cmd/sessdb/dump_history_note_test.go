package main

import (
	"encoding/binary"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"sessdb/internal/sample"
	"sessdb/store"
)

// A key whose history holds an entry that does not decode: dump --json
// says so in meta_error, check as record-undecodable, and the key table in
// NOTE. The text history table has no NOTE column, and printed the
// entries it could read (a fleet) or none (a key dir) and nothing of the
// rest: an operator reading it took the history for whole. It says so now
// under the table, one line per such key, as the key table's NOTE says
// it; the exit status is unchanged (dump read the key: the damage is what
// it reports, as in the key table).
func TestTextDumpHistorySaysAnEntryDoesNotDecode(t *testing.T) {
	check := func(t *testing.T, key string, args ...string) {
		t.Helper()
		code, jout, errs := runCLI(t, append([]string{"dump", "--json", "--history", "8", "--key", key}, args...)...)
		var meta string
		if code != exitOK || !strings.Contains(jout, `"meta_error":"`) {
			t.Fatalf("dump --json: exit %d, no meta_error\n%s%s", code, jout, errs)
		}
		meta = jout[strings.Index(jout, `"meta_error":"`)+len(`"meta_error":"`):]
		meta = meta[:strings.Index(meta, `"`)]
		code, out, errs := runCLI(t, append([]string{"dump", "--history", "8", "--key", key}, args...)...)
		want := "note " + key + ": " + meta + "\n"
		if code != exitOK || !strings.Contains(out, want) || errs != "" {
			t.Fatalf("dump --history: exit %d; want exit 0 and the line\n%s  got:\n%s%s", code, want, out, errs)
		}
		// Only the key with the damage has the line.
		if strings.Count(out, "note ") != 1 {
			t.Fatalf("dump --history: more than the one key's line:\n%s", out)
		}
	}
	t.Run("key dir", func(t *testing.T) {
		atSampleTime(t)
		root := copySample(t)
		bdb, err := bolt.Open(filepath.Join(root, sample.Resumable, "meta.db"), 0o600, &bolt.Options{Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		err = bdb.Update(func(tx *bolt.Tx) error {
			return tx.Bucket([]byte("history")).Put(binary.BigEndian.AppendUint64(nil, 2), []byte{0xc1})
		})
		bdb.Close()
		if err != nil {
			t.Fatal(err)
		}
		check(t, sample.Resumable, root)
		// Every key, not just the one: the line is the damaged key's.
		code, out, _ := runCLI(t, "dump", "--history", "8", root)
		if code != exitOK || strings.Count(out, "note ") != 1 || !strings.Contains(out, "note "+sample.Resumable+": ") {
			t.Fatalf("dump --history of the root: exit %d\n%s", code, out)
		}
	})
	t.Run("fleet", func(t *testing.T) {
		f := startFleet(t)
		key := store.Key("github", "acme/widget", "pi/history-damaged")
		f.run(t, key, "job-1")
		f.run(t, key, "job-2")
		if _, err := f.c.Client(t).Put(t.Context(), f.prefix+"/history/"+key+"/0000000000000001", "\xc1 not msgpack"); err != nil {
			t.Fatal(err)
		}
		check(t, key)
	})
}
