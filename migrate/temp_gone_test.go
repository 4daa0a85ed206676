package migrate

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"sessdb/db"
	"sessdb/internal/fsat"
)

// A meta.db temp's creator lets go of its flock only once the temp's name
// is gone (linked into place and unlinked, or removed when the creation
// failed). The sweep of a key's meta.db temps that opened such a temp
// just before, and had the flock just after, on a file no name leads to,
// took it for a killed run's debris: the unlink found nothing, which
// fsat.Remove takes for done, and the run listed the temp among what it
// removed, its dry run among what it would remove. The temp is past
// tempGrace (a creator stalled on its fsync, or a clock set back). As
// store's removals do (TestReapOfAMetaDBTempItsCreatorRemovedSweepsNothing),
// the sweep looks at the name again once it has the flock: in both
// directions, neither the run nor its dry run lists the temp.
func TestTheSweepDoesNotListAMetaDBTempItsCreatorRemoved(t *testing.T) {
	root, keys := newCorpus(t)
	key := keyNamed(keys, "plain")
	name := db.TempPrefix + "00000000000000e0"
	p := filepath.Join(root, key, name)
	t.Cleanup(func() { fsat.TestHookFlockedNowOpened = nil })
	for _, toLegacy := range []bool{false, true} {
		for _, dry := range []bool{true, false} {
			must(t, os.WriteFile(p, []byte("a meta.db being made"), 0o600))
			old := time.Now().Add(-2 * tempGrace)
			must(t, os.Chtimes(p, old, old))
			opens := 0
			fsat.TestHookFlockedNowOpened = func(n string) {
				if n != name {
					return
				}
				if opens++; opens == 1 {
					// The creator's unlink, and its flock let go.
					if err := os.Remove(p); err != nil {
						t.Error(err)
					}
				}
			}
			opts := testOpts()
			if dry {
				opts = Options{DryRun: true, Now: opts.Now}
			}
			got, _ := migrate(t, root, toLegacy, opts)
			fsat.TestHookFlockedNowOpened = nil
			if r := got[key]; slices.Contains(r.Removed, name) || opens != 1 {
				t.Errorf("%s, dry run %v: removed %v, of which the temp its creator removed under the sweep's look (opened %d times; want once)", direction(toLegacy), dry, r.Removed, opens)
			}
		}
	}
}
