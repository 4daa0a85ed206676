package fleet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"sessdb/db"
	"sessdb/fleet/etcdmeta"
	"sessdb/internal/etcdtest"
	"sessdb/store"
	"sessdb/store/storetest"
)

// TestConformance runs the conformance suite on a fleet with one real etcd
// member; every promise gets a prefix and a transcripts dir of its own.
func TestConformance(t *testing.T) {
	etcdtest.Beside(t)
	storetest.Run(t, &fleetHarness{c: etcdtest.Start1(t)})
}

// TestConformanceOnExternalEtcd runs the same suite on one member of the
// etcd binary SESSDB_ETCD_BINARY names (docs/fleet.md's is Debian's etcd
// 3.4), whose answers the linked 3.7 server's do not show; it skips,
// saying so, when none is named. Its Interrupt is the Backend's hook, not
// the member's, so every promise runs on the released binary as it is.
func TestConformanceOnExternalEtcd(t *testing.T) {
	bin := etcdtest.ExternalBinary(t)
	storetest.Run(t, &fleetHarness{c: etcdtest.Start(t, etcdtest.Options{Binary: bin})})
}

type fleetHarness struct{ c *etcdtest.Cluster }

func (h *fleetHarness) New(t *testing.T) storetest.Instance {
	in := &fleetInstance{t: t, c: h.c, prefix: "/sessdb/" + randHex(8), dir: t.TempDir()}
	in.b = in.open(in.dir)
	return in
}

// fleetInstance is one prefix and one transcripts dir.
type fleetInstance struct {
	t      *testing.T
	c      *etcdtest.Cluster
	prefix string
	dir    string
	b      *Backend
}

func (in *fleetInstance) open(dir string) *Backend {
	b, err := Open(Config{Config: etcdmeta.Config{Endpoints: in.c.Endpoints(), Prefix: in.prefix, RequestTimeout: 10 * time.Second}, TranscriptsDir: dir})
	if err != nil {
		in.t.Fatal(err)
	}
	in.t.Cleanup(func() { b.Close() })
	return b
}

func (in *fleetInstance) Open(opts store.Options) *store.Store { return store.NewOn(in.b, opts) }

func (in *fleetInstance) Respelled(opts store.Options) *store.Store {
	link := filepath.Join(in.t.TempDir(), "link")
	if err := os.Symlink(in.dir, link); err != nil {
		in.t.Fatal(err)
	}
	return store.NewOn(in.open(link), opts)
}

func (in *fleetInstance) Record(key string) (db.Sidecars, []db.HistoryEntry, error) {
	st, err := in.b.meta.Get(context.Background(), key)
	return sidecarsOf(st.Record), historyOf(st.History), err
}

// file is the path of the generation key's record names.
func (in *fleetInstance) file(key string) (string, error) {
	st, err := in.b.meta.GetRecord(context.Background(), key)
	if err != nil {
		return "", err
	}
	if st.Record.Transcript == nil {
		return "", fmt.Errorf("key %s names no transcript", key)
	}
	return filepath.Join(in.dir, st.Record.Transcript.File), nil
}

func (in *fleetInstance) Damage(key string, d storetest.Damage) error {
	putRaw := func(v []byte) error {
		_, err := in.c.Client(in.t).Put(context.Background(), in.prefix+"/record/"+key, string(v))
		return err
	}
	switch d {
	case storetest.DamageRecord:
		return putRaw([]byte("\xc1garbage"))
	case storetest.DamageNewerSchema:
		b, err := msgpack.Marshal(map[string]any{"v": etcdmeta.SchemaVersion + 1})
		if err != nil {
			return err
		}
		return putRaw(b)
	case storetest.DamageKeyLink:
		elsewhere := filepath.Join(in.t.TempDir(), key)
		if err := os.Rename(filepath.Join(in.dir, key), elsewhere); err != nil {
			return err
		}
		return os.Symlink(elsewhere, filepath.Join(in.dir, key))
	case storetest.DamageHistoryFull:
		(&fixture{t: in.t, prefix: in.prefix}).toLastSlot(in.c, key)
		return nil
	case storetest.DamageRecordGenZero:
		return in.editTranscript(key, func(t *etcdmeta.Transcript) { t.Gen = 0 })
	case storetest.DamageRecordWideCRC:
		return in.editTranscript(key, func(t *etcdmeta.Transcript) { t.CRC32C |= 1 << 32 })
	case storetest.DamageRecordNegativeSize:
		return in.editTranscript(key, func(t *etcdmeta.Transcript) { t.Size = -1 })
	case storetest.DamageLosePending:
		return fmt.Errorf("a fleet has no pending temps: its commit names a file already in place: %w", errors.ErrUnsupported)
	}
	p, err := in.file(key)
	if err != nil {
		return err
	}
	switch d {
	case storetest.DamageTranscriptChanged:
		return editFile(p, func(b []byte) []byte { b[len(b)-5] ^= 0x20; return b })
	case storetest.DamageTranscriptGrown:
		return editFile(p, func(b []byte) []byte { return append(b, "{}\n"...) })
	case storetest.DamageTranscriptEmptied:
		return os.Truncate(p, 0)
	case storetest.DamageTranscriptLink:
		outside := filepath.Join(in.t.TempDir(), "outside.jsonl")
		if err := os.WriteFile(outside, []byte(`{"type":"session"}`+"\n"), 0o600); err != nil {
			return err
		}
		return replaceFile(p, func() error { return os.Symlink(outside, p) })
	case storetest.DamageTranscriptFIFO:
		return replaceFile(p, func() error { return syscall.Mkfifo(p, 0o600) })
	case storetest.DamageTranscriptGone:
		return os.Remove(p)
	}
	return fmt.Errorf("damage %q: %w", d, errors.ErrUnsupported)
}

// editTranscript puts key's record again with its transcript edited, as
// etcdctl could: a record no sessdb writes.
func (in *fleetInstance) editTranscript(key string, edit func(*etcdmeta.Transcript)) error {
	st, err := in.b.meta.GetRecord(context.Background(), key)
	if err != nil {
		return err
	}
	if st.Record.Transcript == nil {
		return fmt.Errorf("key %s names no transcript", key)
	}
	bad := *st.Record.Transcript
	edit(&bad)
	rec := st.Record
	rec.Transcript = &bad
	_, err = in.b.meta.Put(context.Background(), key, st.Rev, rec, etcdmeta.HistoryEntry{Gen: bad.Gen, At: bad.PromotedAt})
	return err
}

// Interrupt fails the next promotion before its commit, or loses the
// answer of its commit (which landed) as a dead leader would.
func (in *fleetInstance) Interrupt(p storetest.Point) {
	at, cause := hookCommit, errors.New("interrupted by the conformance suite")
	if p == storetest.AfterCommit {
		at, cause = hookAfterCommit, fmt.Errorf("put: %w: the answer was lost (conformance suite)", etcdmeta.ErrUnavailable)
	}
	var fired atomic.Bool
	in.b.hook = func(q, _ string) error {
		if q == at && !fired.Swap(true) {
			return cause
		}
		return nil
	}
}

func editFile(p string, edit func([]byte) []byte) error {
	b, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	return os.WriteFile(p, edit(b), 0o600)
}

func replaceFile(p string, make func() error) error {
	if err := os.Remove(p); err != nil {
		return err
	}
	return make()
}

// Stall opens the instance's fleet through a member that is not there (a
// port nothing listens on), with a request timeout of wait: every etcd
// request of the store's resolves and promotes goes unanswered until
// then. There is nothing to release.
func (in *fleetInstance) Stall(_ string, opts store.Options, wait time.Duration) (*store.Store, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	b, err := Open(Config{Config: etcdmeta.Config{Endpoints: []string{"http://" + addr}, Prefix: in.prefix, RequestTimeout: wait, DialTimeout: wait}, TranscriptsDir: in.dir})
	if err != nil {
		return nil, nil, err
	}
	in.t.Cleanup(func() { b.Close() })
	return store.NewOn(b, opts), func() {}, nil
}

// AtRefusal runs f as the next refusal's record is about to be sent (the
// Backend's hook: the store has decided the refusal, and looked at its
// ctx for the last time).
func (in *fleetInstance) AtRefusal(f func()) {
	var fired atomic.Bool
	in.b.hook = func(q, _ string) error {
		if q == hookRefuse && !fired.Swap(true) {
			f()
		}
		return nil
	}
}

// AtCommit runs f as the next promotion's commit begins, before its
// guarded put is sent.
func (in *fleetInstance) AtCommit(f func()) {
	var fired atomic.Bool
	in.b.hook = func(q, _ string) error {
		if q == hookCommit && !fired.Swap(true) {
			f()
		}
		return nil
	}
}
