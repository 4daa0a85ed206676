package fleet

import (
	"testing"

	"sessdb/fleet/etcdmeta"
	"sessdb/gates"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// A record whose size is negative names no file a resolve can take,
// even where the name is the key's own file of its generation (a name and
// a size are foreign input, namesOwnFile): meta-unreadable, never a path
// followed with a size no file has.
func TestARecordOfANegativeSizeIsMetaUnreadable(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	key := store.Key("github", "hostile", "negative-size")
	f.run(key, "one")
	st, err := f.b.meta.GetRecord(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	rec := st.Record
	tr := *rec.Transcript
	tr.Size = -1
	rec.Transcript = &tr
	if _, err := f.b.meta.Put(t.Context(), key, st.Rev, rec, etcdmeta.HistoryEntry{Gen: tr.Gen}); err != nil {
		t.Fatal(err)
	}
	sess, err := f.s.Resolve(key, testJob, t.TempDir())
	if err != nil || sess.Reason != gates.MetaUnreadable {
		t.Fatalf("resolve of a record of size -1 = %+v, %v; want meta-unreadable", sess, err)
	}
}
