package fleet

import (
	"context"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"sessdb/db"
	"sessdb/internal/etcdtest"
	"sessdb/internal/faults"
	"sessdb/migrate"
	"sessdb/store"
)

// --to etcd whose create finds the key held (another write put it there
// between the run's look, which found nothing, and its create) judges
// the key against what holds it, and where the key dir's history does
// not say whether the fleet's generation descends from the key dir's,
// reads the fleet's file for the key dir's bytes (descends). A stop
// there (fault point fleet-migrate/descends) is a stop, as before the
// create: nothing landed (the create found the key held), the file this
// run wrote is removed with the conflict, the key is not printed, the
// root and the transcripts dir are as they were, the run is interrupted,
// and a re-run finds the key already there. Before, this stop was
// untested (RELIABILITY §9, left by the fifty-first session).
func TestToEtcdStoppedAsItReadsWhetherTheKeyItsCreateFoundHeldDescends(t *testing.T) {
	c := etcdtest.Start1(t)
	const stopAt = 3 // the read of the fleet's file at which the stop comes
	f := newFixture(t, c)
	key := store.Key("github", "migrate-stop-descends", "after create")
	// The fleet's gen 1, of 256 KiB, and its gen 2, which begins with
	// gen 1's bytes.
	f.run(key, bigMarker)
	gen1, err := os.ReadFile(filepath.Join(f.dir, f.recordFile(key)))
	if err != nil {
		t.Fatal(err)
	}
	f.run(key, "fleet 2")
	fleetFiles := f.files(key)
	// The key's record and history taken out of etcd, to be put back
	// by "another write" once the run has looked and found nothing.
	cli := c.Client(t)
	var held []*mvccpb.KeyValue
	for _, p := range []string{f.prefix + "/record/" + key, f.prefix + "/history/" + key + "/"} {
		resp, err := cli.Get(context.Background(), p, clientv3.WithPrefix())
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, resp.Kvs...)
		if _, err := cli.Delete(context.Background(), p, clientv3.WithPrefix()); err != nil {
			t.Fatal(err)
		}
	}
	if len(held) < 2 {
		t.Fatalf("the key's keys in etcd: %d; want its record and history", len(held))
	}
	// A key dir holding gen 1, its meta.db with no history.
	root := t.TempDir()
	kd := filepath.Join(root, key)
	if err := os.Mkdir(kd, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(kd, store.TranscriptName), gen1, 0o600); err != nil {
		t.Fatal(err)
	}
	v := migPi
	updateMeta(t, kd, func(tx *db.Tx) error {
		return tx.PutSidecars(db.Sidecars{PiVersion: &v, Transcript: &db.Transcript{Gen: 1, Size: int64(len(gen1)),
			CRC32C: uint64(crc32.Checksum(gen1, crc32.MakeTable(crc32.Castagnoli))), PromotedAt: migNow.UnixNano()}})
	})
	tree := treeOf(t, root)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reads, copied := 0, 0
	faults.Set(func(p faults.Point) error {
		if p == faults.FleetMigrateDescends {
			if reads++; reads == stopAt {
				cancel()
			}
		}
		return nil
	})
	t.Cleanup(func() { faults.Set(nil) })
	f.b.hook = func(p, k string) error {
		if p == hookMigrateCopy && k == key {
			copied++
			// Another write takes the key: the create finds it held.
			for _, kv := range held {
				if _, err := cli.Put(context.Background(), string(kv.Key), string(kv.Value)); err != nil {
					return err
				}
			}
		}
		return nil
	}
	var got []MigrateReport
	sum, err := ToEtcd(ctx, root, f.b, migOpts(), func(r MigrateReport) error { got = append(got, r); return nil })
	faults.Set(nil)
	f.b.hook = nil
	if copied != 1 {
		t.Fatalf("the run reached its copy %d times; want once (the key absent at its look)", copied)
	}
	if !errors.Is(err, context.Canceled) || !sum.Interrupted {
		t.Errorf("stopped as it read the fleet's file after the create found the key held: %+v, %v; want context.Canceled, interrupted", sum, err)
	}
	if reads != stopAt {
		t.Errorf("stopped at the read %d of the fleet's file: %d reads in all; want no read after the stop", stopAt, reads)
	}
	if len(got) != 0 {
		t.Errorf("the key the stop cut with nothing landed was printed: %+v; want it left as a key never started", got)
	}
	if now := treeOf(t, root); diffMaps(tree, now) != "" {
		t.Errorf("the root after the stop: %s; want it as it was", diffMaps(tree, now))
	}
	if files := f.files(key); !slices.Equal(files, fleetFiles) {
		t.Errorf("the key's files in the transcripts dir after the stop: %v; want the fleet's %v alone (the run's copy removed)", files, fleetFiles)
	}
	again, _ := runMigration(t, true, root, f.b, migOpts())
	if r := again[key]; r.Action != migrate.Already || !strings.Contains(r.Cause, "promoted it since") {
		t.Fatalf("the re-run: %s %v (%s); want already, the fleet having promoted it since", r.Action, r.Written, r.Cause)
	}
}
