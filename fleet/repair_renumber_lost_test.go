package fleet

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"sessdb/fleet/etcdmeta"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// check --repair whose renumber lands and loses its answer (etcd's
// "leader changed" once the commit was applied) says the history was
// numbered again, and walks on: the renumber's commit is sent again on
// its base and finds its entries in place (etcdmeta's RenumberHistory).
// Before, the walk stopped on etcd unavailable and the finding said "left
// as is" of a history numbered again, which the next check found nothing
// to do about.
func TestARepairWhoseRenumberLostItsAnswerSaysItRenumbered(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start(t, etcdtest.Options{Members: 1, InProcess: true})
	f := newFixture(t, c)
	key := store.Key("github", "renumber", "lost-answer")
	f.run(key, "one")
	f.run(key, "two")
	vals := f.toLastSlot(c, key)
	f.b.hook = func(p, k string) error {
		if p == hookRepairLocked && k == key {
			// The renumber's read is the next Txn, its commit the one after.
			c.LoseNext("/etcdserverpb.KV/Txn", 1, 1)
		}
		return nil
	}
	found := f.repairAll(f.b)
	f.b.hook = nil
	want := "numbered again in place: the newest 2 entries at slots 1 to 2, each as it was; the record is not rewritten (its revision, a job's base, stays) and the key takes promotions again"
	if len(found) != 1 || !found[0].Repaired || found[0].Remains || found[0].Repair != want {
		t.Fatalf("check --repair whose renumber lost its answer: %+v; want Repair %q", found, want)
	}
	seqs, got := f.historyValues(c, key)
	if !slices.Equal(seqs, []string{"0000000000000001", "0000000000000002"}) || !slices.Equal(got, vals) {
		t.Fatalf("history after the repair: %v; want the two entries at 1 and 2, each as it was", seqs)
	}
}

// check --repair whose renumber lands and then loses the answer of every
// try (the commit applied, each try sent again served too and its answer
// lost, until the request timeout) does not say the history was left as
// is: it may have been numbered again (here it was). The walk stops on
// etcd unavailable as before, and the key's orphans stay, but the finding
// says the renumber may have landed, as a reap's unanswered delete says
// the key may be removed already.
func TestARepairWhoseRenumberWentUnansweredSaysItMayHaveLanded(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start(t, etcdtest.Options{Members: 1, InProcess: true})
	f := newFixture(t, c, func(cfg *Config) { cfg.RequestTimeout = 500 * time.Millisecond })
	key := store.Key("github", "renumber", "unanswered")
	f.run(key, "one")
	f.run(key, "two")
	vals := f.toLastSlot(c, key)
	f.b.hook = func(p, k string) error {
		if p == hookRepairLocked && k == key {
			// The renumber's read is the next Txn; its commit, and every
			// try of it sent again, are served and their answers lost.
			c.LoseNext("/etcdserverpb.KV/Txn", 1, 1000)
		}
		return nil
	}
	var found []store.Finding
	_, err := f.b.Check(t.Context(), CheckOptions{Repair: true, Workers: 1}, func(fd store.Finding) error {
		found = append(found, fd)
		return nil
	})
	f.b.hook = nil
	c.LoseNext("/etcdserverpb.KV/Txn", 0, 0)
	if !errors.Is(err, etcdmeta.ErrUnavailable) {
		t.Errorf("check --repair whose renumber went unanswered = %v; want etcd unavailable", err)
	}
	seqs, got := f.historyValues(c, key)
	if !slices.Equal(seqs, []string{"0000000000000001", "0000000000000002"}) || !slices.Equal(got, vals) {
		t.Fatalf("history after the repair: %v; want the two entries at 1 and 2 (the renumber landed)", seqs)
	}
	if len(found) != 1 || found[0].Repaired || !found[0].Remains ||
		strings.HasPrefix(found[0].Repair, "left as is") || !strings.Contains(found[0].Repair, "may be numbered again already") {
		t.Fatalf("the finding of a renumber that landed unanswered: %+v; want it not left as is, saying it may be numbered again already", found)
	}
}

// check --repair whose caller cancels it after the renumber's commit
// landed, its answer lost, does not say it stopped before the history was
// numbered again: it may have been (here it was). A watch on the slot the
// newest entry is renumbered to cancels the check as soon as the commit
// lands; the tries sent again meanwhile are served and their answers lost.
func TestARepairCancelledAfterItsRenumberLandedDoesNotSayBefore(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start(t, etcdtest.Options{Members: 1, InProcess: true})
	f := newFixture(t, c, func(cfg *Config) { cfg.RequestTimeout = 5 * time.Second })
	key := store.Key("github", "renumber", "cancelled-after")
	f.run(key, "one")
	f.run(key, "two")
	vals := f.toLastSlot(c, key)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	wctx, stop := context.WithCancel(t.Context())
	defer stop()
	w := c.Client(t).Watch(wctx, f.prefix+"/history/"+key+"/0000000000000002", clientv3.WithCreatedNotify())
	if r := <-w; !r.Created {
		t.Fatalf("the watch: %+v", r)
	}
	landed := make(chan struct{})
	go func() {
		defer close(landed)
		for r := range w {
			if len(r.Events) > 0 {
				cancel()
				return
			}
		}
	}()
	f.b.hook = func(p, k string) error {
		if p == hookRepairLocked && k == key {
			c.LoseNext("/etcdserverpb.KV/Txn", 1, 1000)
		}
		return nil
	}
	var found []store.Finding
	_, err := f.b.Check(ctx, CheckOptions{Repair: true, Workers: 1}, func(fd store.Finding) error {
		found = append(found, fd)
		return nil
	})
	f.b.hook = nil
	c.LoseNext("/etcdserverpb.KV/Txn", 0, 0)
	stop()
	<-landed
	if !errors.Is(err, context.Canceled) {
		t.Errorf("check --repair cancelled once its renumber landed = %v; want context.Canceled", err)
	}
	seqs, got := f.historyValues(c, key)
	if !slices.Equal(seqs, []string{"0000000000000001", "0000000000000002"}) || !slices.Equal(got, vals) {
		t.Fatalf("history after the repair: %v; want the two entries at 1 and 2 (the renumber landed)", seqs)
	}
	if len(found) != 1 || found[0].Repaired || !found[0].Remains ||
		strings.Contains(found[0].Repair, "before the history was numbered again") || !strings.Contains(found[0].Repair, "may be numbered again already") {
		t.Fatalf("the finding of a renumber cancelled once it landed: %+v; want it saying the history may be numbered again already", found)
	}
}
