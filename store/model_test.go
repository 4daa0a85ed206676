package store_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"sessdb/migrate"
	"sessdb/store"
	"sessdb/store/storetest"
)

// TestModel runs random sequences of jobs, reaps, checks and migrations
// on the key-dir store against the reference model (storetest.RunModel).
func TestModel(t *testing.T) { storetest.RunModel(t, keyDirsHarness{}) }

func (k *keyDirsInstance) Inspect(key string, opts store.Options, job store.Job) (store.KeyReport, bool, error) {
	var r store.KeyReport
	found := false
	if _, err := os.Lstat(filepath.Join(k.root, key)); os.IsNotExist(err) {
		return r, false, nil
	}
	err := k.Open(opts).InspectWith(context.Background(), store.InspectOptions{History: 64, Only: key, Job: &job, Verify: true}, func(kr store.KeyReport) error {
		r, found = kr, true
		return nil
	})
	return r, found && r.Layout != store.LayoutEmpty, err
}

// A root no job has made yet is no store to reap or check: the commands
// fail on it, naming it, and the model has no key in it.
func (k *keyDirsInstance) noRoot() bool {
	_, err := os.Stat(k.root)
	return os.IsNotExist(err)
}

func (k *keyDirsInstance) Reap(opts store.Options) ([]string, error) {
	if k.noRoot() {
		return nil, nil
	}
	res, err := k.Open(opts).Reap(false)
	if err == nil && len(res.Failed)+len(res.Refused) > 0 {
		// Not a name left alone for what it is (a quarantine dir): a
		// fault, or a key holding what is not the store's.
		err = fmt.Errorf("skipped %v", res.Skipped)
	}
	return res.Removed, err
}

func (k *keyDirsInstance) Check(opts store.Options, repair bool) ([]store.Finding, error) {
	if k.noRoot() {
		return nil, nil
	}
	var found []store.Finding
	_, err := k.Open(opts).Check(context.Background(), store.CheckOptions{Repair: repair}, func(f store.Finding) error {
		found = append(found, f)
		return nil
	})
	return found, err
}

func (k *keyDirsInstance) ToLegacy(opts store.Options) error {
	return k.migrate(migrate.ToLegacy, opts)
}
func (k *keyDirsInstance) ToDB(opts store.Options) error { return k.migrate(migrate.ToDB, opts) }

func (k *keyDirsInstance) migrate(to func(string, migrate.Options, func(migrate.Report) error) (migrate.Summary, error), opts store.Options) error {
	if k.noRoot() {
		return nil
	}
	// An empty key dir (a refused first promotion's) is skipped: no key.
	sum, err := to(k.root, migrate.Options{Now: opts.Now}, func(migrate.Report) error { return nil })
	if err == nil && sum.Failed+sum.Locked > 0 {
		err = fmt.Errorf("%+v", sum)
	}
	return err
}

// Lock holds the key's meta.db lock, as a promotion in another process
// would: the jobs wait for it.
func (k *keyDirsInstance) Lock(key string) (func(), bool, error) {
	return storetest.LockKeyDir(filepath.Join(k.root, key))
}

func (k *keyDirsInstance) Settle(key string, opts store.Options, accept bool) ([]store.Finding, error) {
	return storetest.SettleOnRoot(k.Open(opts), key, accept)
}
