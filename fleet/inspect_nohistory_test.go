package fleet

import (
	"context"
	"path/filepath"
	"testing"

	"sessdb/gates"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// A dump without --history reads no history (InspectOptions' zero value
// reports every record with no history; the records are one snapshot):
// a key whose history holds an entry that does not decode, its record
// sound, is reported without a meta error, resumable, as a resolve finds
// it (meta_error: why the record could not be read, resolve
// meta-unreadable; docs/json.md). Only --history reads the entry and
// reports it (TestInspectWithHistoryReportsAnUndecodableEntry). Before
// (mutant i04 of the fleet sweep's list, `o.History > 0` -> `>= 0`), no
// test told the two apart: the mutant read every key's history for a
// dump without --history, an etcd range of up to 64 entries per key, and
// reported the entry's error as the key's meta error while the resolve
// resumed it.
func TestADumpWithoutHistoryReadsNoHistory(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "inspect", "no-history")
	f.run(key, "one")
	if _, err := c.Client(t).Put(context.Background(), f.prefix+"/history/"+key+"/0000000000000002", "\xc1 not msgpack"); err != nil {
		t.Fatal(err)
	}
	var got []Report
	err := f.b.Inspect(t.Context(), InspectOptions{}, func(r Report) error {
		got = append(got, r)
		return nil
	})
	if err != nil || len(got) != 1 || got[0].MetaError != "" || len(got[0].History) != 0 || got[0].Gen != 1 ||
		got[0].Verdict == nil || got[0].Verdict.IfMatched != string(gates.Resumed) {
		t.Fatalf("dump without --history of a key with an undecodable history entry: %+v, %v; want its record (gen 1), resumable, no meta error", got, err)
	}
	if sess, err := f.s.Resolve(key, testJob, filepath.Join(t.TempDir(), "job")); err != nil || sess.Reason != gates.Resumed {
		t.Fatalf("resolve of the key: %s, %v; want resumed", sess.Reason, err)
	}
}
