package fleet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"sessdb/gates"
	"sessdb/internal/etcdtest"
	"sessdb/internal/faults"
	"sessdb/internal/testfs"
	"sessdb/store"
)

// NFS reports a write that failed (EIO, ENOSPC, EDQUOT) at the fsync or
// the close that sends the data, not at the write: the promotion is
// promote-failed with that errno, the job's transcript left in its job
// dir, the record unchanged and no file of it left in the transcripts dir;
// the same job's retry then promotes.
func TestAWriteFailingAtItsFsyncOrCloseIsPromoteFailed(t *testing.T) {
	f := newFixture(t, etcdtest.Start1(t))
	t.Cleanup(func() { faults.Set(nil) })
	key := store.Key("github", "late-write-error", "x")
	f.run(key, "one")
	before := f.files(key)
	var failed store.Session
	for _, at := range []faults.Point{faults.SharedWriteSync, faults.SharedWriteClose} {
		for _, errno := range []unix.Errno{unix.EIO, unix.ENOSPC, unix.EDQUOT} {
			t.Run(fmt.Sprintf("%s %v", at, errno), func(t *testing.T) {
				sess, jobDir := f.job(key, "two")
				failed = sess
				staged := stagedOf(t, jobDir)
				faults.Set(func(p faults.Point) error {
					if p == at {
						return errno
					}
					return nil
				})
				res, err := f.promote(sess)
				faults.Set(nil)
				if res.Promoted || res.Reason != gates.PromoteFailed || !errors.Is(err, errno) {
					t.Fatalf("promote = %+v, %v; want promote-failed with %v", res, err, errno)
				}
				if got := stagedOf(t, jobDir); !bytes.Equal(got, staged) {
					t.Fatal("the job's transcript changed")
				}
				if got := f.files(key); fmt.Sprint(got) != fmt.Sprint(before) {
					t.Fatalf("the key's files are %v, want %v", got, before)
				}
				f.holds(key, "one", 1)
			})
		}
	}
	if res, err := f.promote(failed); err != nil || !res.Promoted || res.Gen != 2 {
		t.Fatalf("the failed job's retry: %+v, %v", res, err)
	}
	f.holds(key, "two", 2)
}

// check lists the transcripts dir, then each key's directory, while
// workers promote and reap: a temp renamed by its promotion, a file its
// promotion removed after a lost compare, and an empty key dir a reap
// removed, each gone between the listing and its lstat or open, are
// nothing to report (before: each was an unreadable problem, exit 3, for
// a fleet with nothing wrong).
func TestCheckRacingWorkersReportsNothingGone(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	key := store.Key("github", "check-race", "x")
	f.run(key, "one")
	gen1 := f.recordFile(key)
	f.run(key, "two")
	temp := key + "/.tmp-0123456789abcdef"
	if err := os.WriteFile(filepath.Join(f.dir, temp), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := "00112233445566778899aabbccddeeff"
	if err := os.Mkdir(filepath.Join(f.dir, empty), 0o700); err != nil {
		t.Fatal(err)
	}
	f.b.hook = func(p, k string) error {
		switch {
		case p == hookCheckDirListed && k == key:
			os.Remove(filepath.Join(f.dir, temp))
			os.Remove(filepath.Join(f.dir, gen1))
		case p == hookCheckDir && k == empty:
			os.Remove(filepath.Join(f.dir, empty))
		}
		return nil
	}
	defer func() { f.b.hook = nil }()
	found, sum := checkFindings(t, f.b, CheckOptions{})
	if sum.Problems != 0 || len(found) != 0 {
		t.Fatalf("check found %d problems: %+v", sum.Problems, found)
	}
}

// A full disk (a tmpfs that fills): a resolve whose copy into the job dir
// fails is a fault, its error ENOSPC, with no staged file and no ticket
// left (nothing half-copied for the job or its promote); a promotion whose
// file the transcripts dir cannot hold is promote-failed with ENOSPC, the
// job's transcript in place, no temp left, the record unchanged; with
// room again, the same job's retry promotes.
func TestAFullDiskIsAFaultOrPromoteFailed(t *testing.T) {
	etcdtest.Beside(t)
	dir := t.TempDir()
	unmount, err := testfs.SmallFS(dir, 256<<10)
	if err != nil {
		t.Skipf("no small filesystem here: %v", err)
	}
	defer unmount()
	f := &fixture{t: t, c: etcdtest.Start1(t), prefix: "/sessdb/" + randHex(8), dir: dir}
	f.b = f.open()
	f.s = store.NewOn(f.b, store.Options{Now: f.clock, Bounds: gates.Bounds{TTL: 14 * 24 * time.Hour}})
	key := store.Key("github", "full-disk", "x")
	sess, jobDir := resolveOn(t, f.s, key)
	big := testHeader + strings.Repeat(markerLine(strings.Repeat("a", 1000)), 40)
	if err := os.WriteFile(filepath.Join(jobDir, store.StagedDirName, store.TranscriptName), []byte(big), 0o600); err != nil {
		t.Fatal(err)
	}
	if res, err := f.promote(sess); err != nil || !res.Promoted {
		t.Fatalf("the first promotion: %+v, %v", res, err)
	}
	gen1 := f.files(key)

	full := t.TempDir()
	unmountJob, err := testfs.SmallFS(full, 16<<10)
	if err != nil {
		t.Skipf("no small filesystem here: %v", err)
	}
	defer unmountJob()
	if _, err := f.s.Resolve(key, testJob, full); !errors.Is(err, unix.ENOSPC) {
		t.Fatalf("a resolve into a full job dir = %v, want ENOSPC", err)
	}
	for _, name := range []string{filepath.Join(store.StagedDirName, store.TranscriptName), "session.ticket"} {
		if _, err := os.Lstat(filepath.Join(full, name)); !os.IsNotExist(err) {
			t.Errorf("%s left in the full job dir: %v", name, err)
		}
	}

	sess, jobDir = resolveOn(t, f.s, key)
	staged := filepath.Join(jobDir, store.StagedDirName, store.TranscriptName)
	more := append(stagedOf(t, jobDir), strings.Repeat(markerLine(strings.Repeat("b", 1000)), 60)...)
	if err := os.WriteFile(staged, more, 0o600); err != nil {
		t.Fatal(err)
	}
	res, err := f.promote(sess)
	if res.Promoted || res.Reason != gates.PromoteFailed || !errors.Is(err, unix.ENOSPC) {
		t.Fatalf("a promotion into a full transcripts dir = %+v, %v; want promote-failed, ENOSPC", res, err)
	}
	if got := f.files(key); fmt.Sprint(got) != fmt.Sprint(gen1) {
		t.Fatalf("the key's files are %v, want %v", got, gen1)
	}
	if got := stagedOf(t, jobDir); !bytes.Equal(got, more) {
		t.Fatal("the job's transcript changed")
	}
	f.holds(key, markers([]byte(big))[39], 1)

	// Room again: the job's retry promotes.
	if err := os.Remove(filepath.Join(dir, gen1[0])); err != nil {
		t.Fatal(err)
	}
	if res, err := f.promote(sess); err != nil || !res.Promoted || res.Gen != 2 {
		t.Fatalf("the retry: %+v, %v", res, err)
	}
}

// A key reaped (its record deleted, its file removed) after check listed
// the records and before the walk came to it is gone, not damaged: check
// reads the record again with its history and judges the key by that
// read (before: "missing, but the record describes gen 1", a problem,
// exit 3, for a key removed as it should be).
func TestCheckRacingAReapReportsNothingGone(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	key := store.Key("github", "check-reap-race", "x")
	f.run(key, "one")
	other := f.open()
	f.b.hook = func(p, k string) error {
		if p == hookCheckEntry && k == key {
			res, err := other.Reap(context.Background(), ReapOptions{TTL: time.Hour, Now: func() time.Time { return time.Now().Add(2 * time.Hour) }})
			if err != nil || len(res.Removed) != 1 {
				t.Errorf("the reap under the check: %+v, %v", res, err)
			}
		}
		return nil
	}
	defer func() { f.b.hook = nil }()
	found, sum := checkFindings(t, f.b, CheckOptions{})
	if sum.Problems != 0 {
		t.Fatalf("check found %d problems: %+v", sum.Problems, found)
	}
}

// A generation the listing judged an orphan, made needed again by a
// promotion during check's walk (gen1 here, a generation above the
// record's that a promotion that died left, is judged by the record's
// date, which the promotion moves on: a generation of the record's, not
// its file, is kept for the grace period), is no orphan: check reads the
// key's record again, and says nothing of it (before: "no record needs
// it (reap removes it)", which reap, reading the key again before its
// sweep, would not do).
func TestCheckJudgesOrphansByTheRecordAsTheWalkReadsIt(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	key := store.Key("github", "check-orphan-race", "x")
	f.now = time.Now().Add(-3 * time.Hour)
	f.run(key, "one")
	f.now = time.Now().Add(-2 * time.Hour)
	f.run(key, "two")
	gen1 := key + "/0000000000000003-0123456789abcdef.jsonl"
	if err := os.WriteFile(filepath.Join(f.dir, gen1), []byte(testHeader), 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-3 * time.Hour)
	os.Chtimes(filepath.Join(f.dir, gen1), old, old)
	f.now = time.Time{}
	found, _ := checkFindings(t, f.b, CheckOptions{})
	if found[gen1].Kind != KindOrphan {
		t.Fatalf("without a promotion under the walk, gen 1 is %+v; want an orphan", found[gen1])
	}
	f.b.hook = func(p, k string) error {
		if p == hookCheckEntry && k == key {
			f.b.hook = nil
			f.run(key, "three")
		}
		return nil
	}
	defer func() { f.b.hook = nil }()
	found, _ = checkFindings(t, f.b, CheckOptions{})
	if g, ok := found[gen1]; ok {
		t.Fatalf("gen 1, needed again since a promotion under the walk, reported: %+v", g)
	}
}

// Two reapers (cron on two hosts) list the same orphans: a file the other
// removed first is not this one's sweep, and no fault either: it is not
// counted, and nothing is logged (before: a warning, session_sweep_failed,
// "no such file or directory", for every file the other got to first).
func TestReapSweepingAfterAnotherReaperIsQuiet(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	key := store.Key("github", "two-reapers", "x")
	f.run(key, "one")
	gen1 := f.recordFile(key)
	f.run(key, "two")
	var log bytes.Buffer
	b := f.open(func(cfg *Config) { cfg.Logger = zerolog.New(&log) })
	b.hook = func(p, k string) error {
		if p == hookSweep && k == key {
			os.Remove(filepath.Join(f.dir, gen1)) // the other reaper's sweep
		}
		return nil
	}
	res, err := b.Reap(context.Background(), ReapOptions{Now: func() time.Time { return time.Now().Add(2 * time.Hour) }})
	if err != nil || len(res.Swept) != 0 || log.Len() != 0 {
		t.Fatalf("reap = %+v, %v; log %q: want nothing swept, nothing logged", res, err, log.String())
	}
	f.holds(key, "two", 2)
}

// A reap that removes a key after check's walk read its record again, and
// before its generation is opened or while it is read (over NFS another
// host's removal fails the reads, ESTALE), leaves nothing wrong: check
// reads the record once more before it reports the file, and a key gone
// is nothing to check (before: "missing, but the record describes gen 1",
// or unreadable, a problem, exit 3).
func TestCheckRacingAReapAtTheGenerationReportsNothing(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	for _, at := range []string{hookCheckOpen, hookVerify} {
		t.Run(at, func(t *testing.T) {
			f := newFixture(t, c)
			key := store.Key("github", "check-reap-open", "x")
			f.run(key, "one")
			other := f.open()
			f.b.hook = func(p, k string) error {
				if p != at || k != key {
					return nil
				}
				res, err := other.Reap(context.Background(), ReapOptions{TTL: time.Hour, Now: func() time.Time { return time.Now().Add(2 * time.Hour) }})
				if err != nil || len(res.Removed) != 1 {
					t.Errorf("the reap under the check: %+v, %v", res, err)
				}
				return unix.ESTALE // at the verify: its reads fail, as over NFS
			}
			defer func() { f.b.hook = nil }()
			found, sum := checkFindings(t, f.b, CheckOptions{})
			if sum.Problems != 0 {
				t.Fatalf("check found %d problems: %+v", sum.Problems, found)
			}
			// A generation that is gone while its record still names it
			// is still a problem.
			f.run(key, "two")
			f.b.hook = func(p, k string) error {
				if p == at && k == key {
					os.Remove(filepath.Join(f.dir, f.recordFile(key)))
					return unix.ESTALE
				}
				return nil
			}
			if found, sum := checkFindings(t, f.b, CheckOptions{}); sum.Problems != 1 {
				t.Fatalf("a generation gone under its record: %d problems, want 1: %+v", sum.Problems, found)
			}
		})
	}
}

// An orphan another reaper (or check --repair elsewhere) removed between
// check's listing of its key's directory and its report is gone, as
// every other name gone since the listing is (a605836): nothing to report
// (before: an orphan notice, "? old; no record needs it (reap removes
// it)", for a file that was no longer there).
func TestCheckSaysNothingOfAnOrphanSweptUnderIt(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	key := store.Key("github", "check-orphan-swept", "x")
	f.now = time.Now().Add(-3 * time.Hour)
	f.run(key, "one")
	gen1 := f.recordFile(key)
	f.now = time.Now().Add(-2 * time.Hour)
	f.run(key, "two")
	old := time.Now().Add(-3 * time.Hour)
	os.Chtimes(filepath.Join(f.dir, gen1), old, old)
	f.now = time.Time{}
	f.b.hook = func(p, k string) error {
		if p == hookCheckDirListed && k == key {
			if err := os.Remove(filepath.Join(f.dir, gen1)); err != nil {
				t.Error(err)
			}
		}
		return nil
	}
	defer func() { f.b.hook = nil }()
	if found, _ := checkFindings(t, f.b, CheckOptions{}); len(found) != 0 {
		t.Fatalf("check found %+v; want nothing", found)
	}
}

// dump --verify of a generation removed under its read (over NFS another
// host's reap fails the reads of a file open here with ESTALE) reports it
// as gone, as a generation gone at the open or at its first line is:
// missing, transcript-replaced, no fault (before: verify unreadable, which
// dump counts as a fault, exit 1). A read that fails with the file still
// there is still unreadable.
func TestDumpVerifyOfAGenerationRemovedUnderItIsMissing(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	key := store.Key("github", "dump-verify-gone", "x")
	f.run(key, "one")
	file := f.recordFile(key)
	dump := func(remove bool) Report {
		t.Helper()
		f.b.hook = func(p, k string) error {
			if p == hookVerify && k == key {
				if remove {
					os.Remove(filepath.Join(f.dir, file))
				}
				return unix.ESTALE // its reads fail
			}
			return nil
		}
		defer func() { f.b.hook = nil }()
		var reps []Report
		if err := f.b.Inspect(context.Background(), InspectOptions{Verify: true}, func(r Report) error { reps = append(reps, r); return nil }); err != nil || len(reps) != 1 {
			t.Fatalf("Inspect: %+v, %v", reps, err)
		}
		return reps[0]
	}
	if r := dump(false); r.Verify == nil || r.Verify.Result != store.VerifyUnreadable {
		t.Fatalf("a read that fails, the file there: %+v", r)
	}
	r := dump(true)
	if r.Verify == nil || r.Verify.Result != store.VerifyNoTranscript || r.Verdict == nil || r.Verdict.Reason != string(gates.TranscriptReplaced) || !strings.Contains(r.Problem, "missing") {
		t.Fatalf("a generation removed under its verify: %+v, verify %+v", r, r.Verify)
	}
}

// dump of a key reaped under it (the record deleted, then its file: a
// reap between the walk's read of the record and the file's open, the
// read of its first line or its verify) reports the key as it is now, as
// a resolve finds it: no record, absent. It said "its transcript ... is
// missing", transcript-replaced: a file lost, where nothing is.
func TestDumpOfAKeyReapedUnderItHasNoRecord(t *testing.T) {
	etcdtest.Beside(t)
	for _, point := range []string{hookOpen, hookHeader, hookVerify} {
		t.Run(point, func(t *testing.T) {
			f := newFixture(t, etcdtest.Start1(t))
			key := store.Key("github", "dump-reaped", "x")
			f.run(key, "one")
			var ret error = unix.ESTALE // its reads fail, as NFS's do
			if point == hookOpen {
				ret = nil
			}
			reaped := f.reapAt(key, point, ret)
			var reps []Report
			if err := f.b.Inspect(context.Background(), InspectOptions{Verify: true, History: 5}, func(r Report) error { reps = append(reps, r); return nil }); err != nil || len(reps) != 1 {
				t.Fatalf("Inspect: %+v, %v", reps, err)
			}
			r := reps[0]
			if !*reaped || r.Problem != "no record" || r.Verdict == nil || r.Verdict.Reason != string(gates.Absent) || r.Transcript != nil || r.Gen != 0 {
				t.Fatalf("dump of a key reaped under it at %s: %+v, verdict %+v; want no record, absent", point, r, r.Verdict)
			}
		})
	}
}
