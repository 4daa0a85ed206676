package store

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/gates"
)

// A meta.db being created holds its temp's flock until the link. Made
// before the clock jumped an hour ahead (or by a creator stalled that
// long on its fsync), it looks older than StaleTempAge; reap leaves it,
// as check --repair does, and sweeps the same temp once no one holds it
// (before: reap swept it whoever held it, and the creation's link failed,
// its promotion promote-failed).
func TestReapLeavesAMetaDBTempBeingCreated(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{})
	key := Key("github", "a/b", "creating")
	writeLegacy(t, root, key, map[string]string{TranscriptName: string(transcriptBytes(clock.now))})
	tmp := filepath.Join(root, key, ".meta.db.tmp-00000000000000cc")
	chkOldFile(t, tmp, clock.now.Add(-2*time.Hour))
	f, err := os.Open(tmp)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	res, err := s.Reap(false)
	if err != nil || len(res.Swept) != 0 {
		t.Fatalf("reap = %+v, %v; want the temp being created left", res, err)
	}
	if _, err := os.Lstat(tmp); err != nil {
		t.Fatalf("the temp being created: %v", err)
	}
	unix.Flock(int(f.Fd()), unix.LOCK_UN)
	if res, err := s.Reap(false); err != nil || len(res.Swept) != 1 {
		t.Fatalf("reap = %+v, %v; want the temp no one holds swept", res, err)
	}
}
