package fleet

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sessdb/fleet/etcdmeta"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// check --repair that loses etcd between the key's lock and the read of
// its record under it stops the walk with etcd unavailable, the key's
// orphan not removed and saying so (repair's doc: etcd not answering the
// record's read is returned, after the key's findings say so). Carried
// on, every key left would wait out the request timeout in turn.
func TestARepairThatLosesEtcdAtItsReadUnderTheLockStops(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c, func(cfg *Config) { cfg.RequestTimeout = 200 * time.Millisecond })
	f.marked() // a fleet's orphans are in a dir it marked before it wrote them
	key := store.Key("github", "repair-read", "outage")
	p := filepath.Join(f.dir, key, "0000000000000001-0123456789abcdef.jsonl")
	old := time.Now().Add(-2 * time.Hour)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(testHeader), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
	connected(t, f.b)
	f.b.hook = func(point, k string) error {
		if point == hookRepairHeld && k == key {
			c.Stop(0)
		}
		return nil
	}
	var found []store.Finding
	_, err := f.b.Check(t.Context(), CheckOptions{Repair: true, Workers: 1}, func(fd store.Finding) error {
		found = append(found, fd)
		return nil
	})
	if !errors.Is(err, etcdmeta.ErrUnavailable) {
		t.Errorf("check --repair that lost etcd at its read under the lock = %v; want etcd unavailable", err)
	}
	if len(found) != 1 || found[0].Kind != KindOrphan || found[0].Repaired || !strings.HasPrefix(found[0].Repair, "not removed") {
		t.Errorf("findings: %+v; want the orphan, not removed", found)
	}
	if _, serr := os.Stat(p); serr != nil {
		t.Errorf("the orphan: %v; want it left", serr)
	}
}
