package fleet

import (
	"context"
	"testing"

	"sessdb/gates"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// A dump of one key (InspectOptions.Only) judges it as the walk of every
// key does: a record that does not decode is reported, meta-unreadable
// with its error, and the dump goes on (Inspect's doc). It is no error
// of the dump: a damaged record is the finding, not a fault.
func TestInspectOfOneDamagedKeyReportsItMetaUnreadable(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "inspect", "one-damaged")
	if _, err := c.Client(t).Put(context.Background(), f.b.meta.RecordKey(key), "not msgpack"); err != nil {
		t.Fatal(err)
	}
	var got []Report
	err := f.b.Inspect(t.Context(), InspectOptions{Only: key}, func(r Report) error {
		got = append(got, r)
		return nil
	})
	if err != nil || len(got) != 1 || got[0].Verdict == nil || got[0].Verdict.Reason != string(gates.MetaUnreadable) || got[0].MetaError == "" {
		t.Fatalf("dump of one damaged key: %+v, %v; want one report, meta-unreadable with its error", got, err)
	}
}

// A dump that reports a key's history (InspectOptions.History) says so
// when an entry of it does not decode: the record is reported as read,
// with the history's error as its meta error, since a promotion that must
// read that history is promote-failed until the entry is removed.
func TestInspectWithHistoryReportsAnUndecodableEntry(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "inspect", "history-damaged")
	f.run(key, "one")
	if _, err := c.Client(t).Put(context.Background(), f.prefix+"/history/"+key+"/0000000000000002", "\xc1 not msgpack"); err != nil {
		t.Fatal(err)
	}
	var got []Report
	err := f.b.Inspect(t.Context(), InspectOptions{Only: key, History: 64}, func(r Report) error {
		got = append(got, r)
		return nil
	})
	if err != nil || len(got) != 1 || got[0].MetaError == "" || got[0].Gen != 1 {
		t.Fatalf("dump --history of a key with an undecodable history entry: %+v, %v; want its record (gen 1) with the history's error", got, err)
	}
}
