package store

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/faults"
)

// chkKey is a key promoted a few times, so its meta.db has free pages and
// two meta pages with real txids.
func chkKey(t *testing.T, s *Store, name string) string {
	t.Helper()
	key := Key("github", "acme/check", name)
	for i := range 4 {
		runJob(t, s, key, localJob(), PromoteRequest{Tokens: tok(int64(i)), Window: 100}, "turn "+name)
	}
	return key
}

func chkDB(root, key string) string { return filepath.Join(root, key, db.FileName) }

// chkMeta returns the meta pages of a key's meta.db.
func chkMeta(t *testing.T, root, key string) db.MetaPages {
	t.Helper()
	return metaPagesOf(t, chkDB(root, key))
}

// metaPagesOf returns the meta pages of the meta.db at path.
func metaPagesOf(t *testing.T, path string) db.MetaPages {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	m, err := db.InspectMeta(f, fi.Size())
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// chkDamages are the damage cases of the issue, plus the ones only bbolt's
// full check or the record decoder sees, each with the finding it must
// produce and whether --repair makes it go away.
var chkDamages = []struct {
	name     string
	kind     Kind
	path     string // "" = <key>/meta.db
	repaired bool
	damage   func(t *testing.T, s *Store, root, key string)
}{
	{"truncated meta.db", KindMetaDamaged, "", true, func(t *testing.T, s *Store, root, key string) {
		// bbolt sizes a small file to its whole mapping: cut under the
		// high-water mark, not merely under the file's size.
		os.Truncate(chkDB(root, key), chkMeta(t, root, key).HighWater()-1)
	}},
	{"zero-length meta.db", KindMetaDamaged, "", true, func(t *testing.T, s *Store, root, key string) {
		os.Truncate(chkDB(root, key), 0)
	}},
	{"meta.db of random bytes", KindMetaDamaged, "", true, func(t *testing.T, s *Store, root, key string) {
		b := make([]byte, 32<<10)
		rand.New(rand.NewSource(1)).Read(b)
		os.WriteFile(chkDB(root, key), b, 0o600)
	}},
	{"newest meta page zeroed", KindMetaPageInvalid, "", true, func(t *testing.T, s *Store, root, key string) {
		m := chkMeta(t, root, key)
		f, _ := os.OpenFile(chkDB(root, key), os.O_WRONLY, 0)
		defer f.Close()
		f.WriteAt(make([]byte, m.PageSize), int64(m.Active*m.PageSize))
	}},
	{"a page neither reachable nor free", KindMetaCheckFailed, "", true, func(t *testing.T, s *Store, root, key string) {
		// Drop the last id from the freelist page: the pre-check cannot
		// know a page went missing, bbolt's full check can.
		m := chkMeta(t, root, key)
		f, _ := os.OpenFile(chkDB(root, key), os.O_RDWR, 0)
		defer f.Close()
		hdr := make([]byte, 16)
		off := int64(m.Pages[m.Active].Freelist) * int64(m.PageSize)
		f.ReadAt(hdr, off)
		count := binary.NativeEndian.Uint16(hdr[10:])
		if count == 0 || count == 0xFFFF {
			t.Fatalf("freelist count %d: no free page to lose", count)
		}
		binary.NativeEndian.PutUint16(hdr[10:], count-1)
		f.WriteAt(hdr, off)
	}},
	{"a sidecar that does not decode", KindRecordUndecodable, "", true, func(t *testing.T, s *Store, root, key string) {
		chkWriteRaw(t, root, key, "sidecars", "venue", []byte{0xc1})
	}},
	{"a history entry that does not decode", KindRecordUndecodable, "", true, func(t *testing.T, s *Store, root, key string) {
		chkWriteRaw(t, root, key, "history", string(binary.BigEndian.AppendUint64(nil, 2)), []byte("not msgpack"))
	}},
	{"transcript edited out of band", KindTranscriptMismatch, TranscriptName, false, func(t *testing.T, s *Store, root, key string) {
		p := filepath.Join(root, key, TranscriptName)
		b, _ := os.ReadFile(p)
		b[len(b)-3] ^= 1 // same size: only the checksum tells
		os.WriteFile(p, b, 0o600)
	}},
	{"pending promotion", KindPendingPromotion, "", true, func(t *testing.T, s *Store, root, key string) {
		faults.Set(func(p faults.Point) error {
			if p == faults.PromoteAfterCommit {
				return errors.New("crash between the commit and the rename")
			}
			return nil
		})
		defer faults.Set(nil)
		sess, jobDir := mustResolve(t, s, key, localJob())
		stage(t, jobDir, append(staged(t, jobDir), entryLine("lost?")...))
		if _, err := s.Promote(sess, PromoteRequest{PiVersion: testPi}); err == nil {
			t.Fatal("the fault did not stop the promotion")
		}
	}},
	{"stray promotion temp", KindStrayTemp, ".current.jsonl.tmp-0123456789abcdef", true, func(t *testing.T, s *Store, root, key string) {
		chkOldFile(t, filepath.Join(root, key, ".current.jsonl.tmp-0123456789abcdef"), s.opts.Now().Add(-2*time.Hour))
	}},
	{"stray meta.db temp", KindStrayTemp, ".meta.db.tmp-0123456789abcdef", true, func(t *testing.T, s *Store, root, key string) {
		chkOldFile(t, filepath.Join(root, key, ".meta.db.tmp-0123456789abcdef"), s.opts.Now().Add(-3*time.Hour))
	}},
	// Under the key's exclusive lock no promotion is writing a temp, so
	// age is no guard any more: a temp a minute old goes too (issue 15.8).
	{"young stray temp", KindStrayTemp, ".current.jsonl.tmp-fedcba9876543210", true, func(t *testing.T, s *Store, root, key string) {
		chkOldFile(t, filepath.Join(root, key, ".current.jsonl.tmp-fedcba9876543210"), s.opts.Now().Add(-time.Minute))
	}},
	{"symlinked key dir", KindLink, "-", false, func(t *testing.T, s *Store, root, key string) {
		real := filepath.Join(t.TempDir(), "elsewhere")
		os.Rename(filepath.Join(root, key), real)
		os.Symlink(real, filepath.Join(root, key))
	}},
	{"symlinked sidecar", KindLink, "venue", false, func(t *testing.T, s *Store, root, key string) {
		os.Symlink("/etc/passwd", filepath.Join(root, key, "venue"))
	}},
	{"hard-linked transcript", KindLink, TranscriptName, false, func(t *testing.T, s *Store, root, key string) {
		os.Link(filepath.Join(root, key, TranscriptName), filepath.Join(t.TempDir(), "second-name"))
	}},
}

func chkWriteRaw(t *testing.T, root, key, bucket, name string, v []byte) {
	t.Helper()
	bdb, err := bolt.Open(chkDB(root, key), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer bdb.Close()
	if err := bdb.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte(bucket)).Put([]byte(name), v) }); err != nil {
		t.Fatal(err)
	}
}

func chkOldFile(t *testing.T, p string, mtime time.Time) {
	t.Helper()
	if err := os.WriteFile(p, []byte("debris\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(p, mtime, mtime)
}

// chkRun runs Check with bbolt's full check in process (none of these
// files kills a process; the CLI tests cover a child that dies).
func chkRun(t *testing.T, s *Store, repair bool) ([]Finding, CheckSummary) {
	t.Helper()
	var found []Finding
	deep := func(_ context.Context, key string) (DeepResult, error) { return s.DeepCheckDB(key), nil }
	sum, err := s.Check(context.Background(), CheckOptions{Repair: repair, DeepCheck: deep}, func(f Finding) error {
		found = append(found, f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found, sum
}

func chkFind(found []Finding, path string, kind Kind) *Finding {
	for i := range found {
		if found[i].Path == path && found[i].Kind == kind {
			return &found[i]
		}
	}
	return nil
}

func TestCheckFindsEachDamage(t *testing.T) {
	for _, c := range chkDamages {
		t.Run(c.name, func(t *testing.T) {
			s, root, _ := newTestStore(t, gates.Bounds{})
			clean := chkKey(t, s, "clean")
			key := chkKey(t, s, "damaged")
			if found, sum := chkRun(t, s, false); len(found) != 0 || sum.Keys != 2 || sum.Remaining != 0 {
				t.Fatalf("before the damage: %+v, %+v", found, sum)
			}
			c.damage(t, s, root, key)
			path := key + "/" + db.FileName
			switch c.path {
			case "-":
				path = key
			case "":
			default:
				path = key + "/" + c.path
			}

			before := treeState(t, root)
			found, sum := chkRun(t, s, false)
			if after := treeState(t, root); after != before {
				t.Fatalf("check without --repair changed the tree:\nbefore:\n%s\nafter:\n%s", before, after)
			}
			f := chkFind(found, path, c.kind)
			if f == nil || f.Severity != SeverityProblem || f.Key != key || !f.Remains || f.Detail == "" {
				t.Fatalf("want a %s problem at %s; found %+v", c.kind, path, found)
			}
			for _, g := range found {
				if g.Key == clean {
					t.Fatalf("the clean key has a finding: %+v", g)
				}
			}
			if sum.Problems == 0 || sum.Remaining != sum.Problems {
				t.Fatalf("summary %+v", sum)
			}

			found, sum = chkRun(t, s, true)
			f = chkFind(found, path, c.kind)
			if f == nil || f.Repair == "" || f.Repaired != c.repaired || f.Remains == c.repaired {
				t.Fatalf("after --repair want repaired=%v: %+v (all: %+v)", c.repaired, f, found)
			}
			if c.repaired && sum.Remaining != 0 {
				t.Fatalf("problems remain after --repair: %+v", found)
			}
			if !c.repaired && sum.Remaining == 0 {
				t.Fatalf("an unrepairable problem was counted as gone: %+v", found)
			}
			// Once repaired, a second look finds no problem at all, and the
			// key is no longer meta-unreadable.
			if c.repaired {
				found, sum = chkRun(t, s, false)
				if sum.Problems != 0 {
					t.Fatalf("a check after the repair finds %+v", found)
				}
				sess, _ := mustResolve(t, s, key, localJob())
				if sess.Reason == gates.MetaUnreadable {
					t.Fatal("the repaired key is still meta-unreadable")
				}
			}
		})
	}
}

// RoundAge is the one rendering of an age in check, dump and reap, on
// every backend: whole days from 48 hours, the largest whole unit below;
// an age past what a time.Duration holds (292 years) in days all the same
// (before, it took the difference, which time.Sub clamps to 106751 days:
// a stray temp whose mtime is in year 1 was "106751d old").
func TestRoundAge(t *testing.T) {
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},
		{59*time.Second + 999*time.Millisecond, "59s"},
		{time.Minute, "1m"},
		{59*time.Minute + 59*time.Second, "59m"},
		{time.Hour, "1h"},
		{47*time.Hour + 59*time.Minute, "47h"},
		{48 * time.Hour, "2d"},
		{400*24*time.Hour + 23*time.Hour, "400d"},
		{-time.Second, "0s (dated in the future)"},
	} {
		if got := RoundAge(now, now.Add(-c.d)); got != c.want {
			t.Errorf("RoundAge of %v = %q, want %q", c.d, got, c.want)
		}
	}
	// 0001-01-01 is 739,948 days before 2026-11-29 (Python's datetime),
	// 9999-12-31 2,912,110 days after 2026-11-29 (at midnight both).
	for _, c := range []struct {
		now, then time.Time
		want      string
	}{
		{now, time.Date(1, 1, 1, 10, 0, 0, 0, time.UTC), "739948d"},
		{time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC), "2912110d"},
		{time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC), "0s (dated in the future)"},
		// An mtime at either end of 64 bits, which tmpfs stores as given
		// (utimensat(2) of -2^63 and 2^63-1 s read back so here; ext4
		// clamps to 1901 and 2446): (1795946400 + 2^63) / 86400 days by
		// Python's integers, and a future. Before, both "-106751991146514d":
		// the Unix seconds' difference overflowed, and time.Unix(2^63-1)
		// wraps to a time in the far past.
		{now, time.Unix(math.MinInt64, 0), "106751991188087d"},
		{now, time.Unix(math.MaxInt64, 0), "0s (dated in the future)"},
		{now, time.Unix(math.MaxInt64-62135596800, 0), "0s (dated in the future)"},
	} {
		if got := RoundAge(c.now, c.then); got != c.want {
			t.Errorf("RoundAge(%v, %v) = %q, want %q", c.now, c.then, got, c.want)
		}
	}
}

// A check --repair that a key's deep check stops (the check process could
// not be started, or died too often) has repaired the keys under way
// beside that key, for good; their findings were dropped with the rest of
// the walk, so no one heard of a temp removed. They are delivered, as an
// interrupt delivers them, and then the key's error is returned. Two
// workers: the first key's deep check fails once the second's temp is
// gone.
func TestCheckStoppedByADeepCheckDeliversWhatWasRepaired(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	a, b := chkKey(t, s, "a"), chkKey(t, s, "b")
	if a > b {
		a, b = b, a
	}
	temp := filepath.Join(root, b, ".current.jsonl.tmp-0123456789abcdef")
	chkOldFile(t, temp, s.opts.Now().Add(-2*time.Hour))
	stopped := errors.New("deep check: 1000 check processes died; giving up")
	deep := func(_ context.Context, key string) (DeepResult, error) {
		if key != a {
			return s.DeepCheckDB(key), nil
		}
		// The deadline only bounds a hang: under a loaded suite the other
		// worker's repair can take more than the 2 s this waited, and the
		// stop then came before it, failing the test.
		for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
			if _, err := os.Lstat(temp); errors.Is(err, os.ErrNotExist) {
				break
			}
		}
		return DeepResult{}, stopped
	}
	var repaired []string
	_, err := s.Check(context.Background(), CheckOptions{Repair: true, DeepCheck: deep, Workers: 2}, func(f Finding) error {
		if f.Repaired {
			repaired = append(repaired, f.Path)
		}
		return nil
	})
	if !errors.Is(err, stopped) {
		t.Fatalf("check: %v; want the deep check's error", err)
	}
	if _, serr := os.Lstat(temp); serr == nil {
		t.Fatal("the second key's temp was not removed")
	}
	if len(repaired) != 1 || repaired[0] != b+"/.current.jsonl.tmp-0123456789abcdef" {
		t.Errorf("repairs visited: %q; want the second key's temp", repaired)
	}
}
