package fleet

import (
	"bytes"
	"testing"

	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// Stage copies size bytes of the run's transcript; a source that holds
// fewer by the time it is read (the job's file cut under the copy) is an
// error, never a staged file of what was left, which a commit would then
// name as the run. Before (mutant T29 of mutfleet46's sweep: Stage's `n
// != want` check dropped), the shorter copy was staged without an error,
// its size the bytes that were left.
func TestAStageWhoseSourceShrankUnderItIsAnError(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	key := store.Key("github", "stage", "shrank")
	x, err := f.b.Begin(key, store.Base{})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	data := []byte(testHeader)
	for _, torn := range []bool{false, true} {
		st, err := x.Stage(1, bytes.NewReader(data), int64(len(data))+10, torn)
		if err == nil {
			t.Errorf("Stage of %d bytes from a source of %d (torn %v) = %+v, nil; want an error", len(data)+10, len(data), torn, st)
		}
	}
}
