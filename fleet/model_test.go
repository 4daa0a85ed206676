package fleet

import (
	"context"
	"testing"

	"sessdb/internal/etcdtest"
	"sessdb/store"
	"sessdb/store/storetest"
)

// TestModel runs random sequences of jobs, reaps and checks on a fleet
// with one real etcd member against the reference model
// (storetest.RunModel).
func TestModel(t *testing.T) { storetest.RunModel(t, &fleetHarness{c: etcdtest.Start1(t)}) }

func (in *fleetInstance) Inspect(key string, opts store.Options, job store.Job) (store.KeyReport, bool, error) {
	var r store.KeyReport
	found := false
	err := in.b.Inspect(context.Background(), InspectOptions{Bounds: opts.Bounds, Now: opts.Now, History: 64, Only: key, Job: &job}, func(rep Report) error {
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
