package fleet

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"sessdb/gates"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// A resolve copying gen 1 while another job promotes gen 2 and a reap
// whose grace is shorter than the copy sweeps gen 1 (the fleet.md caveat
// broken on purpose). On NFS the copy's reads then fail (ESTALE: the hook
// closes the file): the named cold start, transcript-replaced, nothing
// staged, its base gen 1 as read, so that the job's cold run is
// superseded by gen 2 and never promoted over it. On a local disk the
// copy of the file unlinked under it is whole (its size and CRC32C are
// the record's): the job resumes gen 1, and its run is superseded too.
// Neither is a torn copy, nor a cold run re-based on the newer record
// (which would promote over a conversation the job never saw).
func TestAGenerationSweptUnderACopyIsAColdStartItsRunSuperseded(t *testing.T) {
	etcdtest.Beside(t)
	for _, nfs := range []bool{true, false} {
		name := map[bool]string{true: "stale reads", false: "local disk"}[nfs]
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, etcdtest.Start1(t))
			key := store.Key("github", "swept-under-copy", "x")
			f.run(key, "one")
			first := f.recordFile(key)
			var stale error
			if nfs {
				stale = errors.New("stale")
			}
			done := promoteAndSweepAt(t, f, hookSource, key, first, stale)
			sess, jobDir := resolveOn(t, f.s, key)
			f.b.hook = nil
			if !*done {
				t.Fatal("the copy never began")
			}
			got := markers(stagedOf(t, jobDir))
			switch {
			case nfs && (sess.Resume || sess.Reason != gates.TranscriptReplaced || len(got) != 0):
				t.Fatalf("a generation swept under a copy whose reads fail: %s (resume %v), staged %v; want transcript-replaced, nothing staged", sess.Reason, sess.Resume, got)
			case !nfs && (!sess.Resume || !slices.Equal(got, []string{"one"})):
				t.Fatalf("a generation unlinked under a local copy: %s (resume %v), staged %v; want gen 1 whole", sess.Reason, sess.Resume, got)
			case sess.Base.Gen != 1:
				t.Fatalf("the ticket's base is gen %d, want gen 1, the generation read", sess.Base.Gen)
			}
			appendMarker(t, jobDir, "late")
			res, err := f.promote(sess)
			if err != nil || res.Promoted || res.Reason != gates.Superseded || res.SupersededBy != 2 {
				t.Fatalf("the job's promote = %+v, %v; want superseded by gen 2", res, err)
			}
			f.holds(key, "two", 2)
		})
	}
}

// The same sweep between the resolve's read of the record and its open
// of gen 1: the generation gone where the record moved on is the key as
// the record says now, and the resolve reads it again and resumes gen 2,
// its base gen 2 (not a cold start on gen 1, whose run gen 2 would
// supersede: the job's turn lost for a file it never needed).
func TestAGenerationSweptBeforeItsOpenResumesTheNewer(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	key := store.Key("github", "swept-before-open", "x")
	f.run(key, "one")
	first := f.recordFile(key)
	done := promoteAndSweepAt(t, f, hookOpen, key, first, nil)
	sess, jobDir := resolveOn(t, f.s, key)
	f.b.hook = nil
	if got := markers(stagedOf(t, jobDir)); !*done || !sess.Resume || sess.Gen() != 2 || sess.Base.Gen != 2 || !slices.Equal(got, []string{"one", "two"}) {
		t.Fatalf("a generation swept before its open, the record moved on: %s (resume %v, gen %d, base gen %d), staged %v; want gen 2 resumed", sess.Reason, sess.Resume, sess.Gen(), sess.Base.Gen, got)
	}
	appendMarker(t, jobDir, "three")
	if res, err := f.promote(sess); err != nil || !res.Promoted || res.Gen != 3 {
		t.Fatalf("the job's promote: %+v, %v; want promoted, gen 3", res, err)
	}
	f.holds(key, "three", 3)
}

// A ticket whose key was reaped and then made anew by another job, with
// the very bytes of the reaped generation (gen 1 again, the same size and
// CRC32C: a history reaped with its key numbers from 1 again), is
// superseded: only the record's revision tells the new gen 1 from the
// one the ticket was resolved from, and etcd never hands a revision out
// twice, across a delete too. A ticket for a key with no record is
// superseded by the key made since, too. Promoted, the stale job's run
// replaced the newer job's work with a run it never saw.
func TestATicketOfAKeyReapedAndMadeAnewIsSuperseded(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	key := store.Key("github", "reaped-made-anew", "x")
	f.run(key, "one")
	stale, staleDir := f.job(key, "stale")
	if !stale.Resume || stale.Base.Gen != 1 || stale.Base.Rev == 0 {
		t.Fatalf("the stale job's resolve: %+v", stale)
	}
	res, err := f.open().Reap(context.Background(), ReapOptions{TTL: time.Hour, Now: func() time.Time { return time.Now().Add(48 * time.Hour) }})
	if err != nil || !slices.Equal(res.Removed, []string{key}) {
		t.Fatalf("reap: %+v, %v", res, err)
	}
	absent, _ := f.job(key, "absent")
	if absent.Resume || absent.Reason != gates.Absent || absent.Base != (store.Base{}) {
		t.Fatalf("a resolve of the reaped key: %+v", absent)
	}
	f.run(key, "one")
	again, _ := resolveOn(t, f.s, key)
	if again.Base.Gen != stale.Base.Gen || again.Base.Size != stale.Base.Size || again.Base.CRC32C != stale.Base.CRC32C || again.Base.Rev == stale.Base.Rev {
		t.Fatalf("the key made anew: base %+v, the stale ticket's %+v; want the same generation at another revision", again.Base, stale.Base)
	}
	for _, j := range []struct {
		name string
		sess store.Session
	}{{"resumed before the reap", stale}, {"absent after the reap", absent}} {
		res, err := f.promote(j.sess)
		if err != nil || res.Promoted || res.Reason != gates.Superseded || res.SupersededBy != 1 {
			t.Errorf("the job %s: %+v, %v; want superseded by gen 1", j.name, res, err)
		}
	}
	f.holds(key, "one", 1)
	if m := markers(stagedOf(t, staleDir)); m[len(m)-1] != "stale" {
		t.Errorf("the stale job's transcript left its job dir: %v", m)
	}
	if got := f.files(key); len(got) != 1 || got[0] != f.recordFile(key) {
		t.Errorf("files %v: want only the record's (the superseded jobs write none)", got)
	}
}

// growOrCut changes a generation in place as a hostile host with write
// access can (the files are write-once by convention, not by the
// kernel): grown, cut short, or one byte changed at the same size.
func growOrCut(t *testing.T, p, how string) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	switch how {
	case "grown":
		b = append(b, `{"type":"message","id":"x"}`+"\n"...)
	case "cut":
		b = b[:len(b)/2]
	case "changed":
		b[len(b)/2] ^= 0x01
	}
	// In place, as the copy has the file open: no rename.
	w, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// A generation changed in place after the resolve opened it and read its
// first line, before its copy (grown, cut short, a byte changed): the
// copy is judged by the record's size and CRC32C, not by the open's
// fstat, and is the named cold start, transcript-replaced, nothing
// staged, never the changed bytes nor a mix of old and new.
func TestAGenerationChangedUnderTheCopyIsNeverHandedOver(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	for _, how := range []string{"grown", "cut", "changed"} {
		t.Run(how, func(t *testing.T) {
			key := store.Key("github", "changed-under-copy", how)
			f.run(key, "one")
			f.b.hook = func(p, k string) error {
				if p == hookSource && k == key {
					growOrCut(t, filepath.Join(f.dir, f.recordFile(key)), how)
				}
				return nil
			}
			sess, jobDir := resolveOn(t, f.s, key)
			f.b.hook = nil
			if got := stagedOf(t, jobDir); sess.Resume || sess.Reason != gates.TranscriptReplaced || len(got) != 0 || sess.Base.Gen != 1 {
				t.Fatalf("a generation %s under the copy: %s (resume %v, base gen %d), %d bytes staged; want transcript-replaced, nothing staged", how, sess.Reason, sess.Resume, sess.Base.Gen, len(got))
			}
		})
	}
}

// Two jobs resolved from one generation, both promoted, the first's
// commit landed with its answer lost (the member that committed it died
// before it answered): once, or on every try until the request timeout.
// Exactly one of them is the key's: the first, promoted at once where a
// try of its own found its commit landed, or promote-failed with its
// file kept (its commit may have landed: reap decides), then promoted,
// a repeat, by its retry with the same ticket. The second is superseded
// by it, its run left in its job dir, and writes no file (its base is
// gone when it begins). In process: the lost answers are LoseNext's.
func TestTwoJobsOfOneGenerationWithALostCommitAnswerPromoteOne(t *testing.T) {
	etcdtest.Beside(t)
	const txn = "/etcdserverpb.KV/Txn" // a commit is one
	for _, lost := range []int{1, 1000} {
		t.Run(map[int]string{1: "lost once", 1000: "lost on every try"}[lost], func(t *testing.T) {
			c := etcdtest.Start(t, etcdtest.Options{Members: 1, InProcess: true})
			t.Cleanup(func() { c.LoseNext(txn, 0, 0) })
			f := newFixture(t, c)
			key := store.Key("github", "lost-answer", "x")
			f.run(key, "one")
			gen1 := f.recordFile(key)
			b := f.open(func(cfg *Config) { cfg.RequestTimeout = 2 * time.Second })
			connected(t, b)
			s := store.NewOn(b, store.Options{Bounds: gates.Bounds{TTL: 14 * 24 * time.Hour}})
			first, firstDir := f.job(key, "first")
			second, secondDir := f.job(key, "second")
			b.hook = func(p, k string) error {
				if p == hookCommit && k == key {
					b.hook = nil
					c.LoseNext(txn, 0, lost)
				}
				return nil
			}
			res, err := s.Promote(first, store.PromoteRequest{PiVersion: testJob.PiVersion})
			c.LoseNext(txn, 0, 0)
			firstFile := f.recordFile(key)
			if firstFile == gen1 {
				t.Fatalf("the first job's commit did not land (%+v, %v): this test proves nothing", res, err)
			}
			switch {
			case lost == 1 && (err != nil || !res.Promoted || res.Gen != 2):
				t.Fatalf("the first job, its answer lost once: %+v, %v; want promoted, gen 2 (its own try found it landed)", res, err)
			case lost > 1 && (err == nil || res.Promoted):
				t.Fatalf("the first job, every answer lost: %+v, %v; want promote-failed", res, err)
			}
			if _, err := os.Stat(filepath.Join(f.dir, firstFile)); err != nil {
				t.Fatalf("the landed commit's file: %v", err)
			}

			res, err = f.promote(second)
			if err != nil || res.Promoted || res.Reason != gates.Superseded || res.SupersededBy != 2 {
				t.Fatalf("the second job: %+v, %v; want superseded by gen 2", res, err)
			}
			if m := markers(stagedOf(t, secondDir)); m[len(m)-1] != "second" {
				t.Errorf("the second job's run left its job dir: %v", m)
			}
			res, err = f.promote(first)
			if err != nil || !res.Promoted || !res.Repeat || res.Gen != 2 {
				t.Fatalf("the first job's retry: %+v, %v; want promoted at gen 2, a repeat", res, err)
			}
			if m := markers(stagedOf(t, firstDir)); m[len(m)-1] != "first" {
				t.Errorf("the first job's run left its job dir: %v", m)
			}
			f.holds(key, "first", 2)
			if got := f.files(key); !slices.Equal(got, []string{gen1, firstFile}) {
				t.Fatalf("files %v: want gen 1 and the first job's %s alone", got, firstFile)
			}
		})
	}
}

// A job resolved on a key past its TTL (the named cold start, expired,
// its base the key's generation) whose key the next reap removes before
// the job promotes: its run, a new conversation that holds nothing of
// the key's, replaces nothing on a key that holds nothing, and is
// promoted as gen 1, as a job resolved on the key after the reap
// (absent) is. It was superseded by nothing (superseded_by 0), the key
// left empty and the conversation in the job dir: any job on an expired
// key that outlasted the next reap (hourly) lost its run so. A resumed
// ticket is still superseded there, as a key made anew supersedes it: it
// would bring back a conversation removed since.
func TestAColdRunWhoseKeyWasReapedSinceIsPromoted(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	key := store.Key("github", "expired-reaped", "x")
	f.now = time.Now().Add(-30 * 24 * time.Hour)
	f.run(key, "old")
	f.now = time.Time{}
	cold, _ := f.job(key, "fresh")
	if cold.Resume || cold.Reason != gates.Expired || cold.Base.Gen != 1 {
		t.Fatalf("a resolve of the key past its TTL: %+v", cold)
	}
	res, err := f.open().Reap(context.Background(), ReapOptions{TTL: 14 * 24 * time.Hour})
	if err != nil || !slices.Equal(res.Removed, []string{key}) {
		t.Fatalf("reap: %+v, %v", res, err)
	}
	pr, err := f.promote(cold)
	if err != nil || !pr.Promoted || pr.Gen != 1 {
		t.Fatalf("the expired job's promote once its key was reaped: %+v, %v; want promoted, gen 1", pr, err)
	}
	f.holds(key, "fresh", 1)

	// Resumed, then the key reaped (the TTL reached during the job):
	// superseded by the key that holds nothing, nothing brought back.
	other := store.Key("github", "resumed-reaped", "x")
	f.now = time.Now().Add(-13 * 24 * time.Hour)
	f.run(other, "old")
	f.now = time.Time{}
	warm, warmDir := f.job(other, "more")
	if !warm.Resume {
		t.Fatalf("a resolve of the key within its TTL: %+v", warm)
	}
	res, err = f.open().Reap(context.Background(), ReapOptions{TTL: 14 * 24 * time.Hour, Now: func() time.Time { return time.Now().Add(48 * time.Hour) }})
	if err != nil || !slices.Contains(res.Removed, other) {
		t.Fatalf("reap: %+v, %v", res, err)
	}
	pr, err = f.promote(warm)
	if err != nil || pr.Promoted || pr.Reason != gates.Superseded || pr.SupersededBy != 0 {
		t.Fatalf("the resumed job's promote once its key was reaped: %+v, %v; want superseded by nothing", pr, err)
	}
	if f.recordFile(other) != "" {
		t.Fatal("the reaped conversation was brought back")
	}
	if m := markers(stagedOf(t, warmDir)); m[len(m)-1] != "more" {
		t.Errorf("the resumed job's run left its job dir: %v", m)
	}
}

// promoteAndSweepAt has the next resolve of key, at its hook point, meet
// another job promoting gen 2 and a reap with a grace of a nanosecond
// sweeping first, gen 1's file; the hook then answers with err. done
// says whether the resolve reached that point.
func promoteAndSweepAt(t *testing.T, f *fixture, point, key, first string, err error) (done *bool) {
	other := store.NewOn(f.open(), store.Options{Bounds: gates.Bounds{TTL: 14 * 24 * time.Hour}})
	reaper := f.open()
	done = new(bool)
	f.b.hook = func(p, k string) error {
		if p != point || k != key || *done {
			return nil
		}
		*done = true
		sess, jobDir := resolveOn(t, other, key)
		appendMarker(t, jobDir, "two")
		if res, err := other.Promote(sess, store.PromoteRequest{PiVersion: testJob.PiVersion}); err != nil || !res.Promoted || res.Gen != 2 {
			t.Errorf("the other job: %+v, %v", res, err)
		}
		if res, err := reaper.Reap(context.Background(), ReapOptions{Grace: time.Nanosecond}); err != nil || !slices.Contains(res.Swept, first) {
			t.Errorf("the reap with a grace shorter than the resolve: %+v, %v; want %s swept", res, err, first)
		}
		return err
	}
	return done
}
