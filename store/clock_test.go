package store

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/gates"
	"sessdb/internal/testfs"
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

// A legacy transcript's mtime is its key's only clock, and a clock gone
// wrong (or touch -d) can set it past the year 9999 where the filesystem
// holds such times (tmpfs, btrfs). dump --json shows it held at the end of
// the range RFC 3339 can write (before: the entry did not marshal, and
// dump --json failed for the whole root).
func TestKeyReportJSONHoldsAnMtimeBeyondTheYear9999(t *testing.T) {
	for _, c := range []struct {
		mtime time.Time
		want  string
	}{
		{time.Unix(300000000000, 0), `"mtime":"9999-12-31T23:59:59.999999999Z"`},
		{time.Unix(-70000000000, 0), `"mtime":"0000-01-01T00:00:00Z"`},
	} {
		r := KeyReport{Name: Key("github", "a/b", "far"), Transcript: &TranscriptReport{Regular: true, Bytes: 1, ModTime: c.mtime}}
		out, err := json.Marshal(r)
		if err != nil || !strings.Contains(string(out), c.want) {
			t.Errorf("mtime %v: %s, %v; want %s", c.mtime, out, err, c.want)
		}
	}
}

// An accepted key whose meta.db was moved aside is dated by its
// transcript's mtime, which a clock gone wrong can set past 2262, the last
// time meta.db holds (ext4 holds mtimes to 2446). It is recorded as that
// last time, still in the future as the mtime was, as migrate records it
// (before: UnixNano wrapped it into the 18th century, and the next reap
// removed the key the operator had just accepted).
func TestAcceptAfterMoveAsideKeepsAnMtimePast2262(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{TTL: 14 * 24 * time.Hour})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "one")
	if err := os.Truncate(chkDB(root, testKey), 0); err != nil {
		t.Fatal(err)
	}
	// Not os.Chtimes, which passes the time through UnixNano too.
	far := testfs.Seconds(t, time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC).Unix())
	if err := unix.UtimesNano(filepath.Join(root, testKey, TranscriptName), []unix.Timespec{far, far}); err != nil {
		t.Fatal(err)
	}
	checkFindings(t, s, CheckOptions{Repair: true, Accept: testKey})
	sc := sidecarsOf(t, root, testKey)
	if sc.Transcript == nil || sc.Transcript.PromotedAt != math.MaxInt64 {
		t.Fatalf("fresh record %+v; want it promoted at the last time meta.db holds", sc.Transcript)
	}
	if res, err := s.Reap(false); err != nil || len(res.Removed) != 0 {
		t.Fatalf("reap at %v = %+v, %v; want the accepted key kept", clock.now, res, err)
	}
}

// A host whose clock reads past 2262 (the last time meta.db holds)
// promotes a key dated that last time, in the future once its clock is
// set right, as it was when promoted; the key resumes and reap keeps it
// (before: UnixNano wrapped the date into the 18th century, and once the
// clock was right the key was expired and reaped).
func TestAPromotionByAClockPast2262IsNotDatedInThePast(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{TTL: 14 * 24 * time.Hour})
	right := clock.now
	clock.now = time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC)
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "one")
	if sc := sidecarsOf(t, root, testKey); sc.Transcript == nil || sc.Transcript.PromotedAt != math.MaxInt64 {
		t.Fatalf("record %+v; want it promoted at the last time meta.db holds", sc.Transcript)
	}
	clock.now = right
	if res, err := s.Reap(false); err != nil || len(res.Removed) != 0 {
		t.Fatalf("reap = %+v, %v; want the key kept", res, err)
	}
	sess, _ := mustResolve(t, s, testKey, localJob())
	want(t, sess, true, gates.Resumed)
}
