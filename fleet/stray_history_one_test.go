package fleet

import (
	"strings"
	"testing"

	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// dump counts a history of one entry with no record in the singular, as
// migrate's causes count one (77c6e3b): one promotion, then the record
// removed alone (the most common such key), was "a history of 1 entries".
func TestDumpCountsAStrayHistoryOfOneEntryInTheSingular(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	key := store.Key("github", "stray-one", "one")
	f.strayHistory(key)
	for _, o := range []InspectOptions{{}, {Only: key}} {
		reports := f.dump(o)
		if len(reports) != 1 || reports[0].Name != key {
			t.Fatalf("dump (only %q) reported %d keys; want the key", o.Only, len(reports))
		}
		const want = "no record, but a history of 1 entry ("
		if p := reports[0].Problem; !strings.HasPrefix(p, want) {
			t.Errorf("dump (only %q) says %q; want it to begin %q", o.Only, p, want)
		}
	}
}
