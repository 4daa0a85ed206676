package fleet

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sessdb/internal/etcdtest"
	"sessdb/internal/faults"
	"sessdb/store"
)

// Ctrl-C while a reap's delete of an expired key is in flight: etcd has
// served it (the key is gone) and its answer is on its way. The key is
// under way, judged under its lock: its removal finishes, as a sessions
// root's reap finishes the key under way and the sweep the removal under
// way, and is reported with its file removed. Cut short with the
// caller's ctx, the answer was dropped: the key gone from etcd, its file
// left, and the interrupted reap's report (exit 130) said nothing of it.
func TestAReapInterruptedWhileItsDeleteIsInFlightReportsTheKey(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "interrupted", "delete")
	f.now = time.Now().Add(-30 * 24 * time.Hour)
	f.run(key, "old")
	f.now = time.Time{}
	file := f.recordFile(key)
	p := etcdtest.NewProxy(t, c.Endpoint(0))
	b := f.open(func(cfg *Config) { cfg.Endpoints = []string{p.URL()} })
	connected(t, b)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	served := make(chan bool, 1)
	b.hook = func(point, k string) error {
		if point != hookReapDelete || k != key {
			return nil
		}
		// The delete is served, its answer held; Ctrl-C once the key is
		// gone from etcd (read past the proxy), then the answer comes.
		p.BlackholeAnswers()
		go func() {
			defer p.Heal()
			for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
				if f.recordFile(key) == "" {
					cancel()
					served <- true
					return
				}
			}
			served <- false
		}()
		return nil
	}
	r, err := b.Reap(ctx, ReapOptions{TTL: 14 * 24 * time.Hour})
	if !<-served {
		t.Fatalf("the delete was never served (reap = %+v, %v): this test proves nothing", r, err)
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("reap = %v; want it interrupted", err)
	}
	_, ferr := os.Lstat(filepath.Join(f.dir, file))
	if !slices.Equal(r.Removed, []string{key}) || !errors.Is(ferr, os.ErrNotExist) {
		t.Errorf("the key gone from etcd; the interrupted reap reports removed %v, skipped %v; its file: %v. Want the key removed, its file with it", r.Removed, r.Skipped, ferr)
	}
}

// The same for check --repair's renumber of a history in the last slot:
// Ctrl-C while its transaction is in flight, served by etcd, its answer
// on its way. The renumber finishes and says so; cut short, its finding
// said "left as is: check interrupted … before the history was numbered
// again", not repaired, of a history numbered again.
func TestARepairInterruptedWhileItsRenumberIsInFlightSaysItIsDone(t *testing.T) {
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "interrupted", "renumber")
	f.run(key, "a")
	f.toLastSlot(c, key)
	p := etcdtest.NewProxy(t, c.Endpoint(0))
	b := f.open(func(cfg *Config) { cfg.Endpoints = []string{p.URL()} })
	connected(t, b)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	cli := c.Client(t)
	served := make(chan bool, 1)
	faults.Set(func(pt faults.Point) error {
		if pt != faults.EtcdRenumberBeforeCommit {
			return nil
		}
		faults.Set(nil)
		p.BlackholeAnswers()
		go func() {
			defer p.Heal()
			for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
				r, err := cli.Get(context.Background(), f.prefix+"/history/"+key+"/0000000000000001")
				if err == nil && len(r.Kvs) == 1 {
					cancel()
					served <- true
					return
				}
			}
			served <- false
		}()
		return nil
	})
	t.Cleanup(func() { faults.Set(nil) })
	var line *store.Finding
	sum, err := b.Check(ctx, CheckOptions{Repair: true}, func(fd store.Finding) error {
		if strings.Contains(fd.Path, "/history/") {
			line = &fd
		}
		return nil
	})
	if !<-served {
		t.Fatalf("the renumber was never served (check = %+v, %v): this test proves nothing", sum, err)
	}
	if line == nil || !line.Repaired || !strings.HasPrefix(line.Repair, "numbered again in place") {
		t.Errorf("check --repair interrupted once its renumber was served = %v; the history's line %+v; want it numbered again, repaired", err, line)
	}
	f.holds(key, "a", 1)
}
