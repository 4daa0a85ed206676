package fleet

import (
	"errors"
	"os"
	"strings"
	"testing"

	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// A key from outside that is not 32 lowercase hex is store.ErrInvalidKey
// at Begin (the Backend's own Go API, as store.Backend names it), before
// anything is done for it: the transcripts dir is not claimed (no mark,
// no fleet ID made) for a promotion that can never be. Before (mutant
// T01 of the mutfleet46 sweep: Begin's ValidKey check dropped), Begin
// claimed the dir, writing its mark, and its error was etcdmeta's
// invalid key, which store.ErrInvalidKey does not match.
func TestBeginOfAnInvalidKeyIsInvalidAndWritesNothing(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	for _, key := range []string{"", strings.Repeat("A", 32), "../" + strings.Repeat("a", 29), strings.Repeat("a", 31) + "/"} {
		txn, err := f.b.Begin(key, store.Base{})
		if txn != nil || !errors.Is(err, store.ErrInvalidKey) {
			t.Errorf("Begin(%q) = %v, %v; want no txn and store.ErrInvalidKey", key, txn, err)
		}
	}
	names, err := os.ReadDir(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		t.Errorf("Begin of an invalid key wrote %s in the transcripts dir", n.Name())
	}
	if id, err := f.b.meta.FleetID(t.Context(), false); err != nil || id != "" {
		t.Errorf("the fleet's ID after Begins of invalid keys = %q, %v; want none", id, err)
	}
}
