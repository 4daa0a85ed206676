package fleet

import (
	"os"
	"path/filepath"
	"testing"

	"sessdb/internal/etcdtest"
)

// A promotion that landed, whose generation's file was then lost or
// damaged (by a disk, or by hand), and the job's retry with its ticket (a
// worker whose answer was lost): the key holds nothing of the run, and
// the record names exactly the retried run, so the retry promotes it again
// and the key resumes it. Before, it repeated the first result
// ("promoted", gen 2) while a resolve found the generation unreadable, and
// a worker that then discarded the job dir lost the run.
func TestRetryOfAPromotionWhoseFileWasLostSincePromotesIt(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start(t, etcdtest.Options{Members: 1})
	for name, lose := range map[string]func(string){
		"gone":    func(p string) { os.Remove(p) },
		"damaged": func(p string) { b, _ := os.ReadFile(p); b[len(b)-3] ^= 0xff; os.WriteFile(p, b, 0o600) },
		// Not a regular file (never opened through): not held, as gone is.
		// Before (mutant T10 of mutfleet46's sweep: HoldsRecord's
		// ErrNotRegular case dropped), the retry was promote-failed.
		"a link": func(p string) { os.Remove(p); os.Symlink("/dev/null", p) },
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, c)
			key := randHex(16)
			f.run(key, "before")
			sess, _ := f.job(key, "lost")
			if res, err := f.promote(sess); err != nil || !res.Promoted || res.Gen != 2 {
				t.Fatalf("promote = %+v, %v; want gen 2", res, err)
			}
			lose(filepath.Join(f.dir, f.recordFile(key)))

			retry, err := f.promote(sess)
			if err != nil || !retry.Promoted || retry.Repeat || retry.Gen != 3 {
				t.Fatalf("the retry = %+v, %v; want promoted anew at gen 3 (gen 2's file is lost)", retry, err)
			}
			f.holds(key, "lost", 3)
		})
	}
}
