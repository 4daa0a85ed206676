package fleet

import (
	"math"
	"strconv"
	"testing"

	"sessdb/fleet/etcdmeta"
	"sessdb/gates"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// A record's CRC32C is damage from 2^32 on, and no sooner: 0xffffffff is
// a CRC32C a file can have (a record that says it of a file whose sum is
// another is a transcript replaced under its record, which a resolve
// reports so), 1<<32 is the narrowest value no file has (meta-unreadable,
// never written over). TestARecordWhoseCRCIsWiderThan32BitsIsDamage sets
// bit 32 over a file's own sum, which a bound one past 2^32, or one at
// 0xffffffff, judged as the bound at 2^32 does.
func TestARecordsCRCIsDamageFromTwoToTheThirtyTwoOn(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	for _, tc := range []struct {
		crc  uint64
		want gates.Reason
	}{
		{math.MaxUint32, gates.TranscriptReplaced},
		{1 << 32, gates.MetaUnreadable},
	} {
		key := store.Key("github", "hostile", "crc-"+strconv.FormatUint(tc.crc, 16))
		f.run(key, "one")
		st, err := f.b.meta.GetRecord(t.Context(), key)
		if err != nil {
			t.Fatal(err)
		}
		if st.Record.Transcript.CRC32C == tc.crc {
			t.Fatalf("the file's own CRC32C is %x: the case tests nothing", tc.crc)
		}
		rec := st.Record
		tr := *rec.Transcript
		tr.CRC32C = tc.crc
		rec.Transcript = &tr
		if _, err := f.b.meta.Put(t.Context(), key, st.Rev, rec, etcdmeta.HistoryEntry{Gen: tr.Gen, At: tr.PromotedAt}); err != nil {
			t.Fatal(err)
		}
		sess, _ := f.job(key, "cold")
		if sess.Resume || sess.Reason != tc.want {
			t.Errorf("a record whose CRC32C is %#x: resolve = %s, want %s", tc.crc, sess.Reason, tc.want)
		}
	}
}
