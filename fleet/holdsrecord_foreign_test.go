package fleet

import (
	"errors"
	"testing"

	"sessdb/fleet/etcdmeta"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// HoldsRecord never opens a name that is not the key's own generation's,
// whatever the file there holds: a record naming another key's file (by
// hand, another binary) is a damaged record, which Begin refuses, and
// HoldsRecord never takes another key's transcript for its own.
// Before (mutant T09 of mutfleet46's sweep: HoldsRecord's namesOwnFile
// check dropped), the victim's file, whose size and CRC32C the hostile
// record copied, was read and said to hold the hostile key's record.
func TestHoldsRecordNeverReadsAnotherKeysFile(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	victim, hostile := store.Key("github", "holds", "victim"), store.Key("github", "holds", "rogue")
	f.run(victim, "one")
	st, err := f.b.meta.Get(t.Context(), victim)
	if err != nil || st.Record.Transcript == nil {
		t.Fatalf("the victim's record: %+v, %v", st, err)
	}
	vt := *st.Record.Transcript
	rec := etcdmeta.Record{Transcript: &etcdmeta.Transcript{Gen: vt.Gen, Size: vt.Size, CRC32C: vt.CRC32C, PromotedAt: vt.PromotedAt, File: vt.File}}
	if _, err := f.b.meta.Put(t.Context(), hostile, 0, rec, etcdmeta.HistoryEntry{Gen: vt.Gen, At: vt.PromotedAt}); err != nil {
		t.Fatal(err)
	}
	// Begin refuses such a record, as damage never written over
	// (TestARecordNamingNoFileOfItsGenerationIsNeverWrittenOver); a txn
	// on it is made here by hand, for HoldsRecord's own guard.
	if _, err := f.b.Begin(hostile, store.Base{}); !errors.Is(err, etcdmeta.ErrDamaged) {
		t.Fatalf("Begin of a record naming another key's file = %v, want ErrDamaged", err)
	}
	hs, err := f.b.meta.Get(t.Context(), hostile)
	if err != nil {
		t.Fatal(err)
	}
	x := &txn{b: f.b, key: hostile, st: hs, caller: t.Context()}
	defer x.Close()
	if holds, err := x.HoldsRecord(); holds || err != nil {
		t.Errorf("HoldsRecord of a record naming another key's file %s = %v, %v; want false, nil", vt.File, holds, err)
	}
	// The victim's own record is held (the test's control).
	y, err := f.b.Begin(victim, store.Base{})
	if err != nil {
		t.Fatal(err)
	}
	defer y.Close()
	if holds, err := y.HoldsRecord(); !holds || err != nil {
		t.Errorf("HoldsRecord of the victim's own record = %v, %v; want true, nil", holds, err)
	}
}
