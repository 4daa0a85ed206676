package migrate

import (
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/db"
	"sessdb/internal/fsat"
	"sessdb/store"
)

// castagnoli is the store's checksum polynomial, a record's CRC32C.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// emptyDB leaves what a migration killed before its commit leaves: a
// meta.db with no records beside the legacy files.
func emptyDB(t testing.TB, dir string) {
	withDB(t, dir, func(*db.DB) {})
}

// promotedDB writes what a promotion by the new store leaves: a transcript
// record for current.jsonl and every sidecar.
func promotedDB(venue string, chain uint64, at time.Time) func(testing.TB, string) {
	return func(t testing.TB, dir string) {
		data, err := os.ReadFile(filepath.Join(dir, "current.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		withDB(t, dir, func(d *db.DB) {
			err := d.Update(func(tx *db.Tx) error {
				pi := testPi
				return tx.PutSidecars(db.Sidecars{
					Transcript:  &db.Transcript{Gen: 7, Size: int64(len(data)), CRC32C: uint64(crc32.Checksum(data, castagnoli)), PromotedAt: at.UnixNano()},
					PiVersion:   &pi,
					Venue:       &venue,
					ResumeChain: &chain,
					Context:     &db.Context{Tokens: 1000, Window: 200000, Model: "anthropic/claude-x"},
				})
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// pendingDB leaves what a store promotion killed between its commit and
// its rename leaves: a record of a new transcript still at its temp name.
func pendingDB(t testing.TB, dir string) {
	data := []byte(transcriptBytes(testNow.Add(-time.Hour)) + `{"type":"message","id":"00000002","parentId":"00000001","timestamp":"2026-11-01T11:30:00.000Z","message":{"role":"user","content":"again"}}` + "\n")
	tmp := storeTempPrefix + "0123456789abcdef"
	must(t, os.WriteFile(filepath.Join(dir, tmp), data, 0o600))
	sum := uint64(crc32.Checksum(data, castagnoli))
	withDB(t, dir, func(d *db.DB) {
		must(t, d.Update(func(tx *db.Tx) error {
			pi, venue, chain := testPi, "local", uint64(2)
			err := tx.PutSidecars(db.Sidecars{
				Transcript: &db.Transcript{Gen: 8, Size: int64(len(data)), CRC32C: sum, PromotedAt: testNow.Add(-3 * time.Hour).UnixNano()},
				PiVersion:  &pi, Venue: &venue, ResumeChain: &chain,
				Context: &db.Context{Tokens: 1000, Window: 200000, Model: "anthropic/claude-x"},
			})
			if err != nil {
				return err
			}
			return tx.PutPending(&db.Pending{Tmp: tmp, Size: int64(len(data)), CRC32C: sum, Gen: 8})
		}))
	})
}

func withDB(t testing.TB, dir string, f func(*db.DB)) {
	t.Helper()
	kd, err := fsat.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer kd.Close()
	d, err := db.OpenWriter(kd, filepath.Join(dir, db.FileName), db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	f(d)
}

// buildCorpus lays the corpus out under root (plus entries that are not
// key dirs) and returns it; with names, only those keys.
func buildCorpus(t testing.TB, root string, names ...string) []corpusKey {
	t.Helper()
	outside := filepath.Dir(root)
	for name, v := range map[string]string{"target-local": "local", "target-pi": testPi, "target-chain": "2", "target-context": "1 2", "target-transcript": transcriptBytes(testNow)} {
		must(t, os.WriteFile(filepath.Join(root, "..", name), []byte(v), 0o600))
	}
	keys := corpus()
	if len(names) > 0 {
		keys = slices.DeleteFunc(keys, func(c corpusKey) bool { return !slices.Contains(names, c.name) })
	}
	for _, c := range keys {
		files := base()
		for n, e := range c.files {
			files[n] = e
		}
		layKeyDir(t, filepath.Join(root, c.key()), files)
		if c.setup != nil {
			c.setup(t, filepath.Join(root, c.key()))
		}
	}
	must(t, os.WriteFile(filepath.Join(root, "README"), []byte("not a key\n"), 0o600))
	must(t, os.Mkdir(filepath.Join(root, "notakey"), 0o700))
	must(t, os.Mkdir(filepath.Join(root, store.Key("test", "corpus", "empty key dir")), 0o700))
	elsewhere := filepath.Join(outside, "elsewhere")
	layKeyDir(t, elsewhere, base())
	must(t, os.Symlink("../elsewhere", filepath.Join(root, store.Key("test", "corpus", "key dir link"))))
	return keys
}

// The entries buildCorpus adds that are not key dirs to migrate.
const corpusSkips = 4

func layKeyDir(t testing.TB, dir string, files map[string]ent) {
	t.Helper()
	must(t, os.MkdirAll(dir, 0o700))
	for name, e := range files {
		p := filepath.Join(dir, name)
		switch e.kind {
		case 0:
			continue
		case 'f':
			must(t, os.WriteFile(p, []byte(e.data), 0o600))
		case 'l':
			must(t, os.Symlink(e.data, p))
		case 'p':
			must(t, unix.Mkfifo(p, 0o600))
		case 'd':
			must(t, os.Mkdir(p, 0o700))
		}
		if !e.mtime.IsZero() {
			ts := []unix.Timespec{unix.NsecToTimespec(e.mtime.UnixNano()), unix.NsecToTimespec(e.mtime.UnixNano())}
			must(t, unix.UtimesNanoAt(unix.AT_FDCWD, p, ts, unix.AT_SYMLINK_NOFOLLOW))
		}
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// fmtValues is the compact form corpusKey.want is written in.
func fmtValues(v Values) string {
	var b strings.Builder
	if v.Transcript != nil {
		b.WriteString("t")
	} else {
		b.WriteString("-")
	}
	if v.Venue != nil {
		fmt.Fprintf(&b, " venue=%q", *v.Venue)
	} else {
		b.WriteString(" venue=-")
	}
	fmt.Fprintf(&b, " pi=%q", v.PiVersion)
	if v.ResumeChain != nil {
		fmt.Fprintf(&b, " chain=%d", *v.ResumeChain)
	} else {
		b.WriteString(" chain=-")
	}
	if c := v.Context; c != nil {
		fmt.Fprintf(&b, " ctx=%d/%d/%q", c.Tokens, c.Window, c.Model)
	} else {
		b.WriteString(" ctx=-")
	}
	return b.String()
}
