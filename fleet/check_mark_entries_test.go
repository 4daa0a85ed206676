package fleet

import (
	"testing"

	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// check counts the transcripts dir's mark as no entry of the store's: a
// fleet of one key is one entry, one key, whatever the dir's mark.
// (Only a history under the mark's name makes the name an entry: see
// TestAHistoryUnderTheMarksNameIsReported.)
func TestCheckCountsNoEntryForTheMark(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	f.run(store.Key("github", "check-mark", "one"), "one")
	sum, err := f.b.Check(t.Context(), CheckOptions{}, nil)
	if err != nil || sum.Entries != 1 || sum.Keys != 1 || sum.Problems != 0 || sum.Notices != 0 {
		t.Fatalf("check of a fleet of one key: %+v, %v; want 1 entry, 1 key, no finding", sum, err)
	}
}
