package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/durable"
	"sessdb/internal/faults"
)

// fileSyncFails is the disk on which every file's fsync fails.
type fileSyncFails struct{ durable.Disk }

func (fileSyncFails) SyncFile(f *os.File) error { return unix.EIO }

// A promotion whose temp could not be fsynced is not acknowledged: a power
// cut could leave a transcript the record does not describe. It fails
// naming the fsync and the file, and the key still resumes the generation
// before it.
func TestAPromotionWhoseTempIsNotDurableFails(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "one")
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	stage(t, jobDir, append(staged(t, jobDir), entryLine("two")...))
	s.disk = diskWrites{fileSyncFails{}}
	res, err := s.Promote(sess, PromoteRequest{PiVersion: testPi})
	if err == nil || res.Promoted || !strings.Contains(err.Error(), "fsync "+s.root) {
		t.Fatalf("a promotion whose temp's fsync failed = %+v, %v; want it failed, naming the fsync of the temp", res, err)
	}
	s.disk = diskWrites{}
	after, jobDir := mustResolve(t, s, testKey, localJob())
	if after.Gen() != 1 || bytes.Contains(staged(t, jobDir), []byte("two")) {
		t.Fatalf("after the failed promotion the key resumes gen %d; want gen 1", after.Gen())
	}
}

// The JSON a worker in another language reads (docs/json.md): each value
// that may be absent is null exactly when it is, a list is [] when empty,
// a CRC32C is 8 hex digits, times are UTC; and a record is shown only with
// all of its gen's size, checksum and time.
func TestReportJSONIsNullExactlyWhereAValueIsAbsent(t *testing.T) {
	at := time.Date(2026, 12, 3, 10, 0, 0, 0, time.FixedZone("X", 3600))
	crc, size := uint64(0xab), int64(42)
	marshal := func(v any) string {
		t.Helper()
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("%#v: %v", v, err)
		}
		return string(b)
	}
	cases := []struct {
		name string
		v    any
		want []string // each in the JSON
	}{
		{"no transcript version, no record, no history", KeyReport{Name: "k", Transcript: &TranscriptReport{Regular: true, ModTime: at}},
			[]string{`"header_version":null`, `"record":null`, `"context":null`, `"pending":null`, `"history":[]`, `"legacy_files":[]`}},
		{"a transcript of version 1", KeyReport{Name: "k", Transcript: &TranscriptReport{HeaderVersion: 1, ModTime: at}}, []string{`"header_version":1`}},
		{"a record", KeyReport{Name: "k", Gen: 3, LastPromotion: &at, CRC32C: &crc, RecordBytes: &size},
			[]string{`"record":{"gen":3,"bytes":42,"crc32c":"000000ab","promoted_at":"2026-12-03T09:00:00Z"}`}},
		{"a record without its time", KeyReport{Name: "k", Gen: 3, CRC32C: &crc, RecordBytes: &size}, []string{`"record":null`}},
		{"a record without its checksum", KeyReport{Name: "k", Gen: 3, LastPromotion: &at, RecordBytes: &size}, []string{`"record":null`}},
		{"a record without its size", KeyReport{Name: "k", Gen: 3, LastPromotion: &at, CRC32C: &crc}, []string{`"record":null`}},
		{"a context and a pending promotion", KeyReport{Name: "k", Context: &ContextReport{Tokens: 5, Window: 10}, Pending: &PendingReport{Tmp: ".current.jsonl.tmp-x", Bytes: 7, CRC32C: 0xc, Gen: 4}},
			[]string{`"context":{"tokens":5,"window":10,"model":null,"pct":null,"over_window":false}`, `"pending":{"tmp":".current.jsonl.tmp-x","bytes":7,"crc32c":"0000000c","gen":4}`}},
		{"a history entry", KeyReport{Name: "k", History: []HistoryReport{{Gen: 2, At: at, Outcome: "promoted", Bytes: 9, Chain: 1, Job: "j"}}},
			[]string{`"history":[{"gen":2,"at":"2026-12-03T09:00:00Z","outcome":"promoted","resumed":false,"reason":"","bytes":9,"chain":1,"job":"j","ticket":null,"base_gen":null,"run":null,"torn_tail":false,"rewritten":false}]`}},
		{"meta pages unreadable", MetaPagesReport{Bytes: 3, Active: -1}, []string{`{"bytes":3,"page_size":null,"high_water":null,"active":null,"fallback":false,"error":null,"pages":[]}`}},
		{"meta pages, the first active", MetaPagesReport{Bytes: 8192, PageSize: 4096, HighWater: 8192, Active: 0}, []string{`"page_size":4096,"high_water":8192,"active":0`}},
		{"a verify that read nothing", VerifyReport{Result: "no-transcript"}, []string{`{"result":"no-transcript","bytes":0,"crc32c":null,"detail":null}`}},
		{"a verify that read a byte", VerifyReport{Result: "ok", Bytes: 1, CRC32C: 0x1f}, []string{`"bytes":1,"crc32c":"0000001f"`}},
		{"a finding outside a key dir", Finding{Path: "p", Kind: "k", Detail: "d"}, []string{`"key":null`, `"repair":null`}},
	}
	for _, c := range cases {
		got := marshal(c.v)
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %s\nwant it to hold %s", c.name, got, w)
			}
		}
	}
}

// A resolve that fails after it opened the key dir (here at the fault
// point past the dir's open, past meta.db's, and at the transcript's
// first line) leaves no descriptor open: a worker that retries would
// otherwise run out of them.
func TestAResolveThatFailsPartWayLeavesNoDescriptor(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "one")
	for _, at := range []faults.Point{faults.ResolveAfterKeyDirOpen, faults.ResolveAfterMetaOpen, faults.TranscriptHeaderRead} {
		faults.Set(func(p faults.Point) error {
			if p == at {
				return unix.EIO
			}
			return nil
		})
		fds := openFDs(t)
		_, err := s.Resolve(testKey, localJob(), t.TempDir())
		faults.Set(nil)
		if !errors.Is(err, unix.EIO) {
			t.Fatalf("resolve failed at %s = %v; want EIO", at, err)
		}
		if n := openFDs(t); n != fds {
			t.Errorf("resolve failed at %s: %d descriptors open after it, %d before", at, n, fds)
		}
	}
}

// A sessions root that is not a directory (a file put at its path) fails a
// resolve with the open's error: never a crash, never a cold start that a
// promotion would then fail to store.
func TestAResolveUnderARootThatIsAFileFails(t *testing.T) {
	root := filepath.Join(t.TempDir(), "sessions")
	if err := os.WriteFile(root, []byte("not a dir"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := New(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Resolve(testKey, localJob(), t.TempDir())
	if err == nil || !strings.Contains(err.Error(), root) {
		t.Fatalf("resolve under a root that is a file = {resume %v, %s}, %v; want an error naming the root", got.Resume, got.Reason, err)
	}
}

// Beside a meta.db that holds no record (a first promotion's or a
// migration's lock caught before its commit) the legacy files decide, and
// a sidecar not read for want of memory fails the resolve, as it does
// without a meta.db: read as no value, the key would cold-start with a
// base and its conversation be replaced.
func TestALegacyReadThatFailsBesideAnEmptyMetaDBFailsTheResolve(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{})
	writeLegacy(t, root, testKey, map[string]string{TranscriptName: string(transcriptBytes(clock.now, "legacy turn")), "pi-version": testPi, "venue": "local"})
	kd, err := os.Open(filepath.Join(root, testKey))
	if err != nil {
		t.Fatal(err)
	}
	defer kd.Close()
	d, err := db.OpenWriter(kd, db.FileName, db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	faults.Set(func(p faults.Point) error {
		if p == faults.LegacySidecarRead {
			return unix.ENOMEM
		}
		return nil
	})
	defer faults.Set(nil)
	got, err := s.Resolve(testKey, localJob(), t.TempDir())
	if !errors.Is(err, unix.ENOMEM) {
		t.Fatalf("resolve whose legacy read failed beside an empty meta.db = {resume %v, %s}, %v; want ENOMEM", got.Resume, got.Reason, err)
	}
}

// A committed promotion that made the transcript shorter (--allow-rewrite)
// and whose temp was lost before its rename leaves the longer generation
// before it in place: a resolve reads that one whole and resumes it, as it
// does the shorter one before a promotion that appended.
func TestALostTempOfAPromotionThatShrankFallsBackToTheLongerGenerationBefore(t *testing.T) {
	for name, lose := range loseTemp {
		t.Run(name, func(t *testing.T) {
			s, root, clock := newTestStore(t, gates.Bounds{})
			runJob(t, s, testKey, localJob(), PromoteRequest{}, "before, a line longer than the rewrite that follows it")
			sess, jobDir := mustResolve(t, s, testKey, localJob())
			stage(t, jobDir, append(transcriptBytes(clock.now), entryLine("short")...))
			faults.Set(func(p faults.Point) error {
				if p == faults.PromoteAfterCommit {
					return errors.New("crash")
				}
				return nil
			})
			res, _ := s.Promote(sess, PromoteRequest{PiVersion: testPi, AllowRewrite: true})
			faults.Set(nil)
			temps, _ := filepath.Glob(filepath.Join(root, testKey, tmpPrefix+"*"))
			if res.Promoted || len(temps) != 1 {
				t.Fatalf("the crashed rewrite = %+v, %d temps", res, len(temps))
			}
			lose(temps[0])
			fds := openFDs(t)
			sess, jobDir = mustResolve(t, s, testKey, localJob())
			if n := openFDs(t); n != fds {
				t.Errorf("%d descriptors open after the resolve, %d before", n, fds)
			}
			if !sess.Resume || sess.Gen() != 1 || !bytes.Contains(staged(t, jobDir), []byte("before, a line longer")) {
				t.Fatalf("resolve after the lost rewrite = {resume %v, %s, gen %d}; want gen 1 resumed", sess.Resume, sess.Reason, sess.Gen())
			}
		})
	}
}

// A legacy key has no record: the copy is its transcript only while the
// name still leads to the file judged (the legacy store's re-check). A
// file put at the name during the copy, of the same size and mtime (a
// copy made with cp -p), or the name removed, is no resume.
func TestALegacyTranscriptReplacedOrRemovedDuringTheCopyIsNoResume(t *testing.T) {
	for _, replace := range []bool{true, false} {
		s, root, clock := newTestStore(t, gates.Bounds{})
		body := transcriptBytes(clock.now, "legacy turn")
		writeLegacy(t, root, testKey, map[string]string{TranscriptName: string(body), "pi-version": testPi, "venue": "local"})
		name := filepath.Join(root, testKey, TranscriptName)
		faults.Set(func(p faults.Point) error {
			if p != faults.LegacyIdentityLstat {
				return nil
			}
			if !replace {
				return os.Remove(name)
			}
			fi, err := os.Stat(name)
			if err != nil {
				return err
			}
			other := name + ".other"
			if err := os.WriteFile(other, bytes.ReplaceAll(body, []byte("legacy"), []byte("LEGACY")), 0o600); err != nil {
				return err
			}
			if err := os.Chtimes(other, fi.ModTime(), fi.ModTime()); err != nil {
				return err
			}
			return os.Rename(other, name)
		})
		got, jobDir := mustResolve(t, s, testKey, localJob())
		faults.Set(nil)
		if got.Resume || len(staged(t, jobDir)) != 0 {
			t.Fatalf("resolve of a legacy key whose transcript was replaced (%v) or removed during the copy = {resume %v, %s}; want a cold start", replace, got.Resume, got.Reason)
		}
	}
}
