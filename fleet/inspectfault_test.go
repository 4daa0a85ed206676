package fleet

import (
	"strings"
	"testing"

	"sessdb/fleet/etcdmeta"
	"sessdb/gates"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// A dump of a key whose record decodes but describes no file a resolve can
// take (a CRC32C wider than 32 bits; a generation its file's name does not
// carry) reports it as a resolve judges it, meta-unreadable, and says
// what is wrong with the record in its meta error, in check's words.
// Before this test, a dump that said every such record "names ..., not a
// file of this key's generation" (a CRC32C's fault too), or judged the
// record as a file's, passed every test.
func TestADumpSaysWhatIsWrongWithARecordThatNamesNoFile(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	for _, c := range []struct {
		name   string
		damage func(*etcdmeta.Transcript)
		want   string
	}{
		{"widecrc", func(tr *etcdmeta.Transcript) { tr.CRC32C |= 1 << 32 }, ", wider than 32 bits, is no file's"},
		{"gen0", func(tr *etcdmeta.Transcript) { tr.Gen = 0 }, ", not a file of this key's generation 0"},
	} {
		key := store.Key("github", "dump-fault", c.name)
		f.run(key, "one")
		st, err := f.b.meta.GetRecord(t.Context(), key)
		if err != nil {
			t.Fatal(err)
		}
		rec := st.Record
		tr := *rec.Transcript
		c.damage(&tr)
		rec.Transcript = &tr
		if _, err := f.b.meta.Put(t.Context(), key, st.Rev, rec, etcdmeta.HistoryEntry{Gen: tr.Gen, At: tr.PromotedAt}); err != nil {
			t.Fatal(err)
		}
		var got []Report
		err = f.b.Inspect(t.Context(), InspectOptions{Only: key}, func(r Report) error {
			got = append(got, r)
			return nil
		})
		if err != nil || len(got) != 1 || got[0].Verdict == nil || got[0].Verdict.Reason != string(gates.MetaUnreadable) || !strings.Contains(got[0].MetaError, c.want) {
			t.Errorf("dump of a record %s: %+v, %v; want it meta-unreadable, its meta error saying %q", c.name, got, err, c.want)
		}
	}
}
