package fleet

import (
	"context"
	"fmt"
	"testing"
	"time"

	"sessdb/gates"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// A key among a batch's whose history entry does not decode is reported
// as a walk a key at a time reports it: its record's verdict, and the
// history's error (dump's meta error); the keys beside it in the same
// read are whole. A batch's read gives each key its own error
// (etcdmeta.GetMany); it is not dropped.
func TestAWalkInBatchesReportsAKeysDamagedHistory(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	var keys []string
	for i := range 3 {
		k := store.Key("github", "batch-damaged", fmt.Sprint(i))
		f.run(k, fmt.Sprint("m", i))
		keys = append(keys, k)
	}
	damaged := keys[1]
	if _, err := c.Client(t).Put(context.Background(), f.b.meta.HistoryDir(damaged)+"0000000000000001", "not msgpack"); err != nil {
		t.Fatal(err)
	}
	got := map[string]Report{}
	err := f.b.Inspect(context.Background(), InspectOptions{Bounds: gates.Bounds{TTL: time.Hour}, History: 64}, func(r Report) error {
		got[r.Name] = r
		return nil
	})
	if err != nil || len(got) != len(keys) {
		t.Fatalf("inspect: %v, %d reports; want %d", err, len(got), len(keys))
	}
	for _, k := range keys {
		r := got[k]
		if r.Verdict == nil || r.Verdict.IfMatched != string(gates.Resumed) {
			t.Errorf("%s: verdict %+v; want its record judged, resumed", k, r.Verdict)
		}
		if k == damaged && r.MetaError == "" {
			t.Errorf("the key whose history entry does not decode: no meta error; want the entry's")
		}
		if k != damaged && (r.MetaError != "" || len(r.History) != 1) {
			t.Errorf("%s, beside it in the read: meta error %q, %d entries; want none, its one entry", k, r.MetaError, len(r.History))
		}
	}
}
