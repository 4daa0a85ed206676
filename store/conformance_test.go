package store_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"
	bolt "go.etcd.io/bbolt"

	"sessdb/db"
	"sessdb/internal/faults"
	"sessdb/internal/fsat"
	"sessdb/store"
	"sessdb/store/legacy"
	"sessdb/store/storetest"
)

// TestConformance runs the conformance suite on the key-dir store: keys
// in meta.db, every damage a key dir can have, the interruptions its fault
// points reach, and the legacy layout's read fallback.
func TestConformance(t *testing.T) { storetest.Run(t, keyDirsHarness{}) }

type keyDirsHarness struct{}

func (keyDirsHarness) New(t *testing.T) storetest.Instance {
	return &keyDirsInstance{t: t, root: filepath.Join(t.TempDir(), "sessions")}
}

// keyDirsInstance is a sessions root.
type keyDirsInstance struct {
	t    *testing.T
	root string
}

func (k *keyDirsInstance) Open(opts store.Options) *store.Store { return k.openAt(k.root, opts) }

func (k *keyDirsInstance) openAt(root string, opts store.Options) *store.Store {
	s, err := store.New(root, opts)
	if err != nil {
		k.t.Fatal(err)
	}
	return s
}

func (k *keyDirsInstance) Respelled(opts store.Options) *store.Store {
	link := filepath.Join(k.t.TempDir(), "link")
	if err := os.MkdirAll(k.root, 0o700); err != nil {
		k.t.Fatal(err)
	}
	if err := os.Symlink(k.root, link); err != nil {
		k.t.Fatal(err)
	}
	return k.openAt(link, opts)
}

func (k *keyDirsInstance) Record(key string) (db.Sidecars, []db.HistoryEntry, error) {
	var sc db.Sidecars
	var h []db.HistoryEntry
	dir, err := fsat.OpenDir(filepath.Join(k.root, key))
	if fsat.IsNotExist(err) {
		return sc, nil, nil
	}
	if err != nil {
		return sc, nil, err
	}
	defer dir.Close()
	d, err := db.OpenReader(dir, filepath.Join(k.root, key, db.FileName), db.Options{})
	if errors.Is(err, os.ErrNotExist) {
		return sc, nil, nil
	}
	if err != nil {
		return sc, nil, err
	}
	defer d.Close()
	err = d.View(func(tx *db.Tx) (err error) {
		if sc, err = tx.Sidecars(); err != nil {
			return err
		}
		h, err = tx.History(0)
		return err
	})
	// Pending is the key-dir store's own bookkeeping, which no other
	// backend has; the suite compares what every backend records.
	sc.Pending = nil
	return sc, h, err
}

func (k *keyDirsInstance) Damage(key string, d storetest.Damage) error {
	dir := filepath.Join(k.root, key)
	transcript := filepath.Join(dir, store.TranscriptName)
	switch d {
	case storetest.DamageRecord:
		return k.putRaw(key, "sidecars", "transcript", []byte{0xc1})
	case storetest.DamageNewerSchema:
		b, _ := msgpack.Marshal(uint64(db.SchemaVersion + 1))
		return k.putRaw(key, "meta", "schema", b)
	case storetest.DamageTranscriptChanged:
		return editFile(transcript, func(b []byte) []byte { b[len(b)-5] ^= 0x20; return b })
	case storetest.DamageTranscriptGrown:
		return editFile(transcript, func(b []byte) []byte { return append(b, "{}\n"...) })
	case storetest.DamageTranscriptEmptied:
		return os.Truncate(transcript, 0)
	case storetest.DamageTranscriptLink:
		return replace(transcript, func() error { return os.Symlink(outsideFile(k.t), transcript) })
	case storetest.DamageTranscriptFIFO:
		return replace(transcript, func() error { return syscall.Mkfifo(transcript, 0o600) })
	case storetest.DamageTranscriptGone:
		return os.Remove(transcript)
	case storetest.DamageKeyLink:
		elsewhere := filepath.Join(k.t.TempDir(), key)
		if err := os.Rename(dir, elsewhere); err != nil {
			return err
		}
		return os.Symlink(elsewhere, dir)
	case storetest.DamageHistoryFull:
		return store.HistoryToTheTop(k.root, key)
	case storetest.DamageRecordGenZero:
		return k.editTranscript(key, func(t *db.Transcript) { t.Gen = 0 })
	case storetest.DamageRecordWideCRC:
		return k.editTranscript(key, func(t *db.Transcript) { t.CRC32C |= 1 << 32 })
	case storetest.DamageRecordNegativeSize:
		return k.editTranscript(key, func(t *db.Transcript) { t.Size = -1 })
	case storetest.DamageLosePending:
		temps, _ := filepath.Glob(filepath.Join(dir, ".current.jsonl.tmp-*"))
		if len(temps) != 1 {
			return fmt.Errorf("%d promotion temps in %s, want the one in flight", len(temps), dir)
		}
		return os.Remove(temps[0])
	}
	return fmt.Errorf("damage %q: %w", d, errors.ErrUnsupported)
}

// editTranscript rewrites key's transcript record with bbolt itself, as
// msgpack encodes db.Transcript, edited: a record package db would never
// put (PutTranscript does not let a generation go back).
func (k *keyDirsInstance) editTranscript(key string, edit func(*db.Transcript)) error {
	bdb, err := bolt.Open(filepath.Join(k.root, key, db.FileName), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		return err
	}
	defer bdb.Close()
	return bdb.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("sidecars"))
		var t db.Transcript
		if err := msgpack.Unmarshal(b.Get([]byte("transcript")), &t); err != nil {
			return err
		}
		edit(&t)
		v, err := msgpack.Marshal(&t)
		if err != nil {
			return err
		}
		return b.Put([]byte("transcript"), v)
	})
}

// putRaw writes one value into key's meta.db with bbolt itself, bypassing
// package db's encoders.
func (k *keyDirsInstance) putRaw(key, bucket, name string, v []byte) error {
	bdb, err := bolt.Open(filepath.Join(k.root, key, db.FileName), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		return err
	}
	defer bdb.Close()
	return bdb.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte(bucket)).Put([]byte(name), v) })
}

// Interrupt arms the store's fault point for the next promotion only.
func (k *keyDirsInstance) Interrupt(p storetest.Point) {
	at := faults.PromoteAfterTempSync
	if p == storetest.AfterCommit {
		at = faults.PromoteAfterCommit
	}
	var fired atomic.Bool
	faults.Set(func(q faults.Point) error {
		if q == at && !fired.Swap(true) {
			return errors.New("interrupted by the conformance suite")
		}
		return nil
	})
	k.t.Cleanup(func() { faults.Set(nil) })
}

// Line lines up the next n promotions where they open meta.db to write.
func (k *keyDirsInstance) Line(n int) (left, done func()) {
	return faults.Line(faults.DBOpenWriter, n)
}

// Plant writes key in the legacy layout: the transcript and a file per
// sidecar, as the legacy worker left them.
func (k *keyDirsInstance) Plant(key string, transcript []byte, s storetest.Stamps) error {
	dir := filepath.Join(k.root, key)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	files := map[string]string{store.TranscriptName: string(transcript)}
	if s.PiVersion != nil {
		files[legacy.PiVersionName] = *s.PiVersion
	}
	if s.Venue != nil {
		files[legacy.VenueName] = *s.Venue
	}
	if s.Chain != nil {
		files[legacy.ResumeChainName] = fmt.Sprint(*s.Chain)
	}
	if c := s.Context; c != nil {
		files[legacy.ContextName] = fmt.Sprintf("%d %d %s", c.Tokens, c.Window, c.Model)
	}
	for name, v := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(v), 0o600); err != nil {
			return err
		}
	}
	return nil
}

func editFile(p string, edit func([]byte) []byte) error {
	b, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	return os.WriteFile(p, edit(b), 0o600)
}

func replace(p string, make func() error) error {
	if err := os.Remove(p); err != nil {
		return err
	}
	return make()
}

// outsideFile is a transcript outside every store, which nothing may
// follow a link to.
func outsideFile(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "outside.jsonl")
	if err := os.WriteFile(p, []byte(`{"type":"session","version":3,"id":"x","timestamp":"2026-11-01T12:00:00.000Z","cwd":"/"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// Stall holds the key's meta.db lock, as a promotion in another process
// would, and opens a store that waits wait for it.
func (k *keyDirsInstance) Stall(key string, opts store.Options, wait time.Duration) (*store.Store, func(), error) {
	unlock, _, err := storetest.LockKeyDir(filepath.Join(k.root, key))
	if err != nil {
		return nil, nil, err
	}
	var once sync.Once
	opts.LockTimeout = wait
	return k.Open(opts), func() { once.Do(unlock) }, nil
}

// AtRefusal runs f where the next promotion has decided its refusal,
// before its record.
func (k *keyDirsInstance) AtRefusal(f func()) {
	var fired atomic.Bool
	faults.Set(func(q faults.Point) error {
		if q == faults.PromoteRefusalDecided && !fired.Swap(true) {
			f()
		}
		return nil
	})
	k.t.Cleanup(func() { faults.Set(nil) })
}

// AtCommit runs f where the next promotion has committed its transaction,
// before its rename.
func (k *keyDirsInstance) AtCommit(f func()) {
	var fired atomic.Bool
	faults.Set(func(q faults.Point) error {
		if q == faults.PromoteAfterCommit && !fired.Swap(true) {
			f()
		}
		return nil
	})
	k.t.Cleanup(func() { faults.Set(nil) })
}
