package fleet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sessdb/db"
	"sessdb/fleet/etcdmeta"
	"sessdb/internal/etcdtest"
	"sessdb/internal/faults"
	"sessdb/internal/fsat"
	"sessdb/store"
	"sessdb/store/storetest"
)

// TestModel runs random sequences of jobs, reaps and checks against the
// reference model (storetest.RunModel) on a fleet with one real etcd
// member, and on a sessions root that the sequences move into a fleet
// and back.
func TestModel(t *testing.T) {
	c := etcdtest.Start1(t)
	t.Run("fleet", func(t *testing.T) { storetest.RunModel(t, &fleetHarness{c: c}) })
	t.Run("root moved into a fleet and back", func(t *testing.T) { storetest.RunModel(t, &movingHarness{c: c}) })
}

func (in *fleetInstance) Inspect(key string, opts store.Options, job store.Job) (store.KeyReport, bool, error) {
	var r store.KeyReport
	found := false
	err := in.b.Inspect(context.Background(), InspectOptions{Bounds: opts.Bounds, Now: opts.Now, History: 64, Only: key, Job: &job, Verify: true}, func(rep Report) error {
		r, found = rep.KeyReport, true
		return nil
	})
	return r, found, err
}

func (in *fleetInstance) Reap(opts store.Options) ([]string, error) {
	res, err := in.b.Reap(context.Background(), ReapOptions{TTL: opts.Bounds.TTL, Now: opts.Now})
	return res.Removed, err
}

func (in *fleetInstance) Check(opts store.Options, repair bool) ([]store.Finding, error) {
	var found []store.Finding
	_, err := in.b.Check(context.Background(), CheckOptions{Repair: repair, Now: opts.Now}, func(f store.Finding) error {
		found = append(found, f)
		return nil
	})
	return found, err
}

// movingHarness makes sessions roots that move into a fleet (a fresh
// prefix and transcripts dir each time) and back into a new root at the
// same path, the old one moved away: docs/fleet.md's way there and back.
type movingHarness struct{ c *etcdtest.Cluster }

func (h *movingHarness) New(t *testing.T) storetest.Instance {
	return &movingInstance{t: t, h: &fleetHarness{c: h.c}, root: filepath.Join(t.TempDir(), "sessions")}
}

type movingInstance struct {
	t     *testing.T
	h     *fleetHarness
	root  string
	trips int
	fleet *fleetInstance // where the keys are; nil: on the root
}

// Revisions: a fleet's bases name their record's revision; a root's none.
func (in *fleetInstance) Revisions() bool { return true }

func (m *movingInstance) Revisions() bool { return m.fleet != nil }

func (m *movingInstance) Side() string {
	if m.fleet == nil {
		return "the root"
	}
	return fmt.Sprint("fleet ", m.trips)
}

func (m *movingInstance) Move(opts store.Options) error {
	ctx, visit := context.Background(), func(MigrateReport) error { return nil }
	if m.fleet == nil {
		if err := os.MkdirAll(m.root, 0o700); err != nil {
			return err
		}
		in := m.h.New(m.t).(*fleetInstance)
		sum, err := ToEtcd(ctx, m.root, in.b, MigrateOptions{Now: opts.Now}, visit)
		if err == nil && !sum.Complete() {
			err = fmt.Errorf("to etcd: %+v", sum)
		}
		if err != nil {
			return err
		}
		m.trips++
		m.fleet = in
		return os.Rename(m.root, fmt.Sprint(m.root, ".left-", m.trips))
	}
	sum, err := FromEtcd(ctx, m.fleet.b, m.root, MigrateOptions{Now: opts.Now}, visit)
	if err == nil && !sum.Complete() {
		err = fmt.Errorf("from etcd: %+v", sum)
	}
	m.fleet = nil
	return err
}

func (m *movingInstance) Open(opts store.Options) *store.Store {
	if m.fleet != nil {
		return m.fleet.Open(opts)
	}
	s, err := store.New(m.root, opts)
	if err != nil {
		m.t.Fatal(err)
	}
	return s
}

func (m *movingInstance) Record(key string) (db.Sidecars, []db.HistoryEntry, error) {
	if m.fleet != nil {
		return m.fleet.Record(key)
	}
	var sc db.Sidecars
	var h []db.HistoryEntry
	dir, err := fsat.OpenDir(filepath.Join(m.root, key))
	if fsat.IsNotExist(err) {
		return sc, nil, nil
	}
	if err != nil {
		return sc, nil, err
	}
	defer dir.Close()
	d, err := db.OpenReader(dir, filepath.Join(m.root, key, db.FileName), db.Options{})
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
	sc.Pending = nil // the key-dir store's own bookkeeping
	return sc, h, err
}

func (m *movingInstance) noRoot() bool {
	_, err := os.Stat(m.root)
	return os.IsNotExist(err)
}

func (m *movingInstance) Inspect(key string, opts store.Options, job store.Job) (store.KeyReport, bool, error) {
	if m.fleet != nil {
		return m.fleet.Inspect(key, opts, job)
	}
	var r store.KeyReport
	found := false
	if _, err := os.Lstat(filepath.Join(m.root, key)); os.IsNotExist(err) {
		return r, false, nil
	}
	err := m.Open(opts).InspectWith(context.Background(), store.InspectOptions{History: 64, Only: key, Job: &job, Verify: true}, func(kr store.KeyReport) error {
		r, found = kr, true
		return nil
	})
	return r, found && r.Layout != store.LayoutEmpty, err
}

func (m *movingInstance) Reap(opts store.Options) ([]string, error) {
	if m.fleet != nil {
		return m.fleet.Reap(opts)
	}
	if m.noRoot() {
		return nil, nil
	}
	res, err := m.Open(opts).Reap(false)
	return res.Removed, err
}

func (m *movingInstance) Check(opts store.Options, repair bool) ([]store.Finding, error) {
	if m.fleet != nil {
		return m.fleet.Check(opts, repair)
	}
	if m.noRoot() {
		return nil, nil
	}
	var found []store.Finding
	_, err := m.Open(opts).Check(context.Background(), store.CheckOptions{Repair: repair}, func(f store.Finding) error {
		found = append(found, f)
		return nil
	})
	return found, err
}

// Lock holds the key's lease-backed etcd lock, as a reaper or a repair in
// another process would: the jobs never take it (docs/fleet.md).
func (in *fleetInstance) Lock(key string) (func(), bool, error) {
	unlock, _, err := in.b.meta.Lock(context.Background(), key)
	return unlock, false, err
}

// Line lines up the root's promotions as the key-dir store's harness
// does; a fleet's promotions commit on etcd's compare, with nothing to
// line up at.
func (m *movingInstance) Line(n int) (left, done func()) {
	if m.fleet != nil {
		return func() {}, func() {}
	}
	return faults.Line(faults.DBOpenWriter, n)
}

func (m *movingInstance) Lock(key string) (func(), bool, error) {
	if m.fleet != nil {
		return m.fleet.Lock(key)
	}
	return storetest.LockKeyDir(filepath.Join(m.root, key))
}

// Settle accepts or quarantines a key of the root; a fleet has neither
// command (its check repairs orphans and a full history only: docs/fleet.md).
func (m *movingInstance) Settle(key string, opts store.Options, accept bool) ([]store.Finding, error) {
	if m.fleet != nil {
		return nil, fmt.Errorf("%w: a fleet has no check --accept or --quarantine", errors.ErrUnsupported)
	}
	return storetest.SettleOnRoot(m.Open(opts), key, accept)
}

// Cut opens the instance's fleet through a member that is not there (a
// port nothing listens on), with a short request timeout: an opened
// Backend whose etcd never answers, or, with cli, the Backend the CLI runs
// a job on when Open found etcd unavailable (Unreachable).
func (in *fleetInstance) Cut(opts store.Options, cli bool) (*store.Store, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	cfg := Config{Config: etcdmeta.Config{Endpoints: []string{"http://" + addr}, Prefix: in.prefix, RequestTimeout: 300 * time.Millisecond, DialTimeout: 300 * time.Millisecond}, TranscriptsDir: in.dir}
	if cli {
		b, err := Unreachable(cfg, fmt.Errorf("etcd login %s: %w", addr, etcdmeta.ErrUnavailable))
		if err != nil {
			return nil, err
		}
		return store.NewOn(b, opts), nil
	}
	b, err := Open(cfg)
	if err != nil {
		return nil, err
	}
	in.t.Cleanup(func() { b.Close() })
	return store.NewOn(b, opts), nil
}

func (m *movingInstance) Cut(opts store.Options, cli bool) (*store.Store, error) {
	if m.fleet == nil {
		return nil, fmt.Errorf("%w: the keys are on the root", errors.ErrUnsupported)
	}
	return m.fleet.Cut(opts, cli)
}
