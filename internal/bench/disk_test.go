package bench

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"sessdb/db"
)

// promotions is how many promotions a key has seen when its size on disk is
// taken: past the history ring's 64 entries, so the ring is full and
// trimming.
const promotions = 100

// BenchmarkDiskPerKey measures what one key's metadata takes on disk after
// 100 promotions (st_blocks*512, as du counts): sessdb's meta.db, the same
// meta.db had its commits carried no history entry (built through package
// db with the same records, to price the history), and the legacy store's
// four sidecar files. The op is the 100 promotions themselves; run it with
// -benchtime 1x, the figures are the reported metrics.
func BenchmarkDiskPerKey(b *testing.B) {
	data := Transcript(64 << 10)
	var metaDB, noHist, sidecars, metaSize, pageSize int64
	must := func(n int64, err error) int64 {
		if err != nil {
			b.Fatal(err)
		}
		return n
	}
	for i := 0; i < b.N; i++ {
		root := filepath.Join(workDir(b), "sessions")
		key := benchKey(1)
		promoteN(b, newStore(b, root), key, data, promotions)
		metaDB = must(Allocated(filepath.Join(root, key, db.FileName)))
		st, err := os.Stat(filepath.Join(root, key, db.FileName))
		if err != nil {
			b.Fatal(err)
		}
		metaSize = st.Size()
		pageSize = int64(pageSizeOf(b, filepath.Join(root, key, db.FileName)))

		noHist = must(Allocated(sidecarsOnlyDB(b, promotions)))

		kd := filepath.Join(workDir(b), key)
		legacyPromoteN(b, kd, data, promotions, false)
		var files []string
		for _, s := range legacySidecars {
			files = append(files, filepath.Join(kd, s))
		}
		sidecars = must(Allocated(files...))
	}
	b.ReportMetric(float64(metaDB), "metadb-B/key")
	b.ReportMetric(float64(noHist), "metadb-nohistory-B/key")
	b.ReportMetric(float64(metaDB-noHist), "history-B/key")
	b.ReportMetric(float64(sidecars), "sidecars-B/key")
	b.ReportMetric(float64(metaSize), "metadb-size-B")
	b.ReportMetric(float64(pageSize), "page-B")
}

// sidecarsOnlyDB commits n promotions' records into a fresh meta.db as
// store.Promote does (the sidecars and pending in one transaction; the
// next promotion's replaces pending), minus the history entry, and returns
// its path.
func sidecarsOnlyDB(b *testing.B, n int) string {
	dir := workDir(b)
	kd, err := os.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer kd.Close()
	name := filepath.Join(dir, db.FileName)
	for gen := uint64(1); gen <= uint64(n); gen++ {
		d, err := db.OpenWriter(kd, name, db.Options{})
		if err != nil {
			b.Fatal(err)
		}
		err = errors.Join(
			d.Update(func(tx *db.Tx) error {
				return errors.Join(
					tx.PutTranscript(db.Transcript{Gen: gen, Size: 65536, CRC32C: 0xdeadbeef, PromotedAt: 1_800_000_000_000_000_000}),
					tx.PutPending(&db.Pending{Tmp: ".current.jsonl.tmp-0123456789abcdef", Size: 65536, CRC32C: 0xdeadbeef, Gen: gen}),
					tx.PutPiVersion(piVersion),
					tx.PutVenue(venue),
					tx.PutResumeChain(gen-1),
					tx.PutContext(&db.Context{Tokens: readingTokens, Window: readingWindow, Model: model}),
				)
			}),
			d.Close(),
		)
		if err != nil {
			b.Fatal(err)
		}
	}
	return name
}

func pageSizeOf(b *testing.B, path string) int {
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	m, err := db.InspectMeta(f, st.Size())
	if err != nil {
		b.Fatal(err)
	}
	return m.PageSize
}
