package fleet

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sessdb/fleet/shared"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// A file of its record's generation that the record does not name (a
// promotion that lost its compare) is kept a grace period after the
// record's promotion, and, once a promotion passes it, a grace period
// after that promotion, as any superseded generation: not "whichever
// comes first" of the two, as fleet.md said. Here the record's promotion
// is 3 h old and the one that passed it 30 minutes: the file is kept.
func TestAFileAtItsRecordsGenerationPassedWithinTheGraceIsKept(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "at the record", "passed")
	now := time.Now()
	f.now = now.Add(-3 * time.Hour)
	f.run(key, "one")
	lost, _, _, err := shared.Write(context.Background(), f.dir, key, 1, strings.NewReader(testHeader))
	if err != nil {
		t.Fatal(err)
	}
	at := now.Add(-2 * time.Hour)
	if err := os.Chtimes(filepath.Join(f.dir, lost), at, at); err != nil {
		t.Fatal(err)
	}
	f.now = now.Add(-30 * time.Minute)
	f.run(key, "two")
	f.now = time.Time{}
	found, _ := checkFindings(t, f.b, CheckOptions{})
	if fd, ok := found[lost]; ok {
		t.Errorf("check named %s: %+v; want it kept (passed 30 minutes ago)", lost, fd)
	}
	res, err := f.b.Reap(context.Background(), ReapOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Swept) != 0 {
		t.Errorf("reap swept %q; want %s kept (passed 30 minutes ago)", res.Swept, lost)
	}
	// A grace shorter than the promotion that passed it: it goes (gen
	// 1's own file, written just now by the wall clock, is not yet past
	// any grace).
	res, err = f.b.Reap(context.Background(), ReapOptions{Grace: 20 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Swept) != 1 || res.Swept[0] != lost {
		t.Errorf("reap --grace 20m swept %q; want %s alone", res.Swept, lost)
	}
}
