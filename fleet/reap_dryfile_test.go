package fleet

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// An expired key's dry run asks of the key's own file what the run's
// unlink meets, and answers as the run does: a file gone since its
// promotion (an operator's rm), or with its key dir, is none of the
// key's failure, removed by both; a key dir that is no directory (a file at its name) fails the
// key, removed and failed by both, with the run's error. A dry run that
// failed the gone file, or took the file at the key dir's name for a file
// gone, or failed a key dir gone, survived every test (mutnew47's R07,
// R08, R09, R10).
func TestFleetReapDryRunOfAnExpiredKeysFileAnswersAsTheRun(t *testing.T) {
	f := newFixture(t, etcdtest.Start1(t))
	gone := store.Key("github", "dry file", "gone")
	notDir := store.Key("github", "dry file", "not a dir")
	dirGone := store.Key("github", "dry file", "dir gone")
	f.runExpired(gone, "g")
	f.runExpired(dirGone, "d")
	f.runExpired(notDir, "n")
	if err := os.Remove(filepath.Join(f.dir, f.recordFile(gone))); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(f.dir, dirGone)); err != nil {
		t.Fatal(err)
	}
	kd := filepath.Join(f.dir, notDir)
	if err := os.RemoveAll(kd); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kd, []byte("not a dir"), 0o600); err != nil {
		t.Fatal(err)
	}
	want := []string{gone, notDir, dirGone}
	slices.Sort(want)
	var causes [2]string
	for i, dry := range []bool{true, false} {
		r, err := f.b.Reap(t.Context(), ReapOptions{DryRun: dry, TTL: 14 * 24 * time.Hour})
		if err != nil || !slices.Equal(r.Removed, want) || len(r.Skipped) != 1 || r.Skipped[notDir] == nil {
			t.Fatalf("reap (dry %v) = %+v, %v; want all three removed, %s failed alone", dry, r, err, notDir)
		}
		causes[i] = r.Skipped[notDir].Error()
	}
	if causes[0] != causes[1] {
		t.Errorf("the dry run failed %s with %q, the run with %q", notDir, causes[0], causes[1])
	}
}
