package fleet

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// The generation files of a key whose record was removed alone (a
// history with no record) are no record's: once past the in-flight
// window (a promotion of the key may be under way) and the grace period
// they are orphans, which check names as such a key's, not as a reaped
// key's or a promotion's that never committed, and reap removes: no
// leak. The history's notice says so. Before, the orphan line named "a
// promotion that lost its commit or never made it, or a reaped key's",
// and the history's notice said nothing of the files, which check left
// unnamed for their first 31 minutes whatever --grace.
func TestTheFilesOfAHistoryWithNoRecordAreNamedAndReaped(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "stray-history", "files")
	var files []string
	for _, m := range []string{"one", "two"} {
		f.run(key, m)
		files = append(files, f.recordFile(key))
	}
	if _, err := c.Client(t).Delete(t.Context(), f.prefix+"/record/"+key); err != nil {
		t.Fatal(err)
	}
	// Young: the in-flight window keeps them whatever the grace.
	found, _ := checkFindings(t, f.b, CheckOptions{Grace: time.Second})
	if fd := found[f.prefix+"/history/"+key+"/"]; !strings.Contains(fd.Detail, "the key's files in the transcripts dir are no record's, each an orphan, which reap removes, once it is 31 minutes old") {
		t.Errorf("the history's notice: %q; want it to say when its files are orphans", fd.Detail)
	}
	for _, file := range files {
		if fd, ok := found[file]; ok {
			t.Errorf("check named %s within the in-flight window: %+v", file, fd)
		}
		old := time.Now().Add(-40 * time.Minute)
		if err := os.Chtimes(filepath.Join(f.dir, file), old, old); err != nil {
			t.Fatal(err)
		}
	}
	found, _ = checkFindings(t, f.b, CheckOptions{Grace: time.Second})
	for _, file := range files {
		fd, ok := found[file]
		if !ok || fd.Kind != KindOrphan || !strings.Contains(fd.Detail, "the key has no record but a history (its record removed alone") {
			t.Errorf("check found %+v at %s; want an orphan of a key with a history and no record", fd, file)
		}
	}
	res, err := f.b.Reap(context.Background(), ReapOptions{Grace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if got := slices.Sorted(slices.Values(res.Swept)); !slices.Equal(got, files) {
		t.Errorf("reap swept %q; want the key's files %q", got, files)
	}
}
