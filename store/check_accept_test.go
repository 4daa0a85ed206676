package store

import (
	"context"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/faults"
)

// check --repair --accept records the transcript in place as the key's
// identity: the next generation, the stamps and the promotion time kept,
// the decision in the history; check is then clean for the key, the next
// resolve resumes it, and promotions go on from there.
func TestAcceptRecordsTheTranscriptInPlace(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{Tokens: tok(5), Window: 10}, "one")
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "two")
	other := Key("github", "a/b", "other")
	runJob(t, s, other, localJob(), PromoteRequest{}, "untouched")
	p := filepath.Join(root, testKey, TranscriptName)
	edited := append(readCanonical(t, root, testKey), entryLine("edited out of band")...)
	if err := os.WriteFile(p, edited, 0o600); err != nil {
		t.Fatal(err)
	}
	before := sidecarsOf(t, root, testKey)
	sess, _ := checkDescribed(t, s, root, testKey)
	want(t, sess, false, gates.TranscriptReplaced)

	if _, err := s.Check(context.Background(), CheckOptions{Accept: testKey}, func(Finding) error { return nil }); err == nil {
		t.Fatal("an accept without repair ran")
	}
	otherBefore := treeState(t, filepath.Join(root, other))
	var found []Finding
	sum, err := s.Check(context.Background(), CheckOptions{Repair: true, Accept: testKey}, func(f Finding) error { found = append(found, f); return nil })
	if err != nil || sum.Entries != 1 || sum.Remaining != 0 {
		t.Fatalf("check --accept = %+v, %v: %+v", sum, err, found)
	}
	mismatch, accepted := chkFind(found, testKey+"/"+TranscriptName, KindTranscriptMismatch), chkFind(found, testKey+"/"+TranscriptName, KindAccepted)
	if mismatch == nil || !mismatch.Repaired || mismatch.Remains || accepted == nil || !accepted.Repaired || !strings.Contains(accepted.Repair, "as gen 3") {
		t.Fatalf("findings: %+v", found)
	}
	if treeState(t, filepath.Join(root, other)) != otherBefore {
		t.Fatal("the accept touched another key")
	}
	after := sidecarsOf(t, root, testKey)
	rec := after.Transcript
	if rec.Gen != 3 || rec.Size != int64(len(edited)) || rec.CRC32C != uint64(crc32.Checksum(edited, castagnoli)) || rec.PromotedAt != before.Transcript.PromotedAt {
		t.Fatalf("record %+v, was %+v", rec, before.Transcript)
	}
	if *after.PiVersion != *before.PiVersion || *after.Venue != *before.Venue || *after.ResumeChain != *before.ResumeChain || *after.Context != *before.Context {
		t.Fatalf("stamps changed: %+v, were %+v", after, before)
	}
	h := historyOf(t, root, testKey)
	if e := h[len(h)-1]; e.Outcome != AcceptedOutcome || e.Gen != 3 || e.Bytes != int64(len(edited)) {
		t.Fatalf("last history entry %+v", e)
	}
	if found := checkFindings(t, s, CheckOptions{}); len(found) != 0 {
		t.Fatalf("check after the accept: %+v", found)
	}
	sess, data := checkDescribed(t, s, root, testKey)
	want(t, sess, true, gates.Resumed)
	if string(data) != string(edited) {
		t.Fatal("resumed something other than what was accepted")
	}

	// Again: nothing to record, nothing written.
	res, err := s.Accept(testKey)
	if err != nil || !res.Already || res.Gen != 3 || len(historyOf(t, root, testKey)) != len(h) {
		t.Fatalf("a second accept = %+v, %v", res, err)
	}
	_, pr := runJob(t, s, testKey, localJob(), PromoteRequest{}, "three")
	if pr.Gen != 4 {
		t.Fatalf("the promotion after the accept got gen %d, want 4", pr.Gen)
	}
}

// A generation is never used twice: one the history remembers above the
// record (a refusal at a later generation, say) is passed over.
func TestAcceptNeverReusesAGeneration(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "one")
	d, err := db.OpenWriter(openDirT(t, filepath.Join(root, testKey)), "meta.db", db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = d.Update(func(tx *db.Tx) error {
		_, err := tx.AppendHistory(db.HistoryEntry{Gen: 7, Outcome: string(gates.Superseded)})
		return err
	})
	d.Close()
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(root, testKey, TranscriptName), transcriptBytes(time.Now(), "restored from backup"), 0o600)
	res, err := s.Accept(testKey)
	if err != nil || res.Gen != 8 {
		t.Fatalf("accept = %+v, %v; want gen 8", res, err)
	}
}

// A key whose damaged meta.db is moved aside gets a fresh record from one
// check --repair --accept: the identity only, no stamps (so it cold-starts
// until its next promotion stamps it), the transcript's mtime as its
// promotion time.
func TestAcceptAfterMoveAside(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "one")
	if err := os.Truncate(chkDB(root, testKey), 0); err != nil {
		t.Fatal(err)
	}
	mtime := clock.now.Add(-time.Hour).Truncate(time.Second)
	os.Chtimes(filepath.Join(root, testKey, TranscriptName), mtime, mtime)
	found := checkFindings(t, s, CheckOptions{Repair: true, Accept: testKey})
	if f := chkFind(found, testKey+"/"+TranscriptName, KindAccepted); f == nil || !f.Repaired || !strings.Contains(f.Repair, "fresh meta.db") {
		t.Fatalf("findings: %+v", found)
	}
	sc := sidecarsOf(t, root, testKey)
	data := readCanonical(t, root, testKey)
	if sc.Transcript == nil || sc.Transcript.Gen != 1 || sc.Transcript.Size != int64(len(data)) || sc.Transcript.PromotedAt != mtime.UnixNano() ||
		sc.PiVersion != nil || sc.Venue != nil || sc.Context != nil {
		t.Fatalf("fresh record %+v", sc)
	}
	for _, f := range checkFindings(t, s, CheckOptions{}) {
		if f.Severity == SeverityProblem {
			t.Fatalf("a problem after the accept: %+v", f)
		}
	}
	sess, _ := checkDescribed(t, s, root, testKey)
	want(t, sess, false, gates.PiVersionChanged)
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "stamped again")
	sess, _ = checkDescribed(t, s, root, testKey)
	want(t, sess, true, gates.Resumed)
}

// Accept writes nothing where there is nothing it may record.
func TestAcceptRefuses(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{})
	legacyKey := Key("github", "a/b", "legacy")
	writeLegacy(t, root, legacyKey, map[string]string{TranscriptName: string(transcriptBytes(clock.now))})
	missing := Key("github", "a/b", "missing")
	runJob(t, s, missing, localJob(), PromoteRequest{}, "one")
	os.Remove(filepath.Join(root, missing, TranscriptName))
	linked := Key("github", "a/b", "linked")
	runJob(t, s, linked, localJob(), PromoteRequest{}, "one")
	os.Remove(filepath.Join(root, linked, TranscriptName))
	os.Symlink("/etc/passwd", filepath.Join(root, linked, TranscriptName))
	damaged := Key("github", "a/b", "damaged")
	runJob(t, s, damaged, localJob(), PromoteRequest{}, "one")
	os.Truncate(chkDB(root, damaged), 0)

	before := treeState(t, root)
	for k, why := range map[string]string{legacyKey: "no meta.db", missing: "no current.jsonl", linked: "symbolic link", damaged: "check --repair moves"} {
		if _, err := s.Accept(k); !errors.Is(err, ErrNotAccepted) || !strings.Contains(err.Error(), why) {
			t.Errorf("accept %s: %v; want ErrNotAccepted naming %q", k, err, why)
		}
	}
	if _, err := s.Accept(Key("github", "a/b", "nowhere")); !os.IsNotExist(errors.Unwrap(err)) && !errors.Is(err, os.ErrNotExist) {
		t.Errorf("accept of a key with no dir: %v", err)
	}
	if treeState(t, root) != before {
		t.Fatal("a refused accept wrote something")
	}
	// The CLI's view: the accepted finding says it was not done.
	found := checkFindings(t, s, CheckOptions{Repair: true, Accept: legacyKey})
	if f := chkFind(found, legacyKey+"/"+TranscriptName, KindAccepted); f == nil || f.Repaired || !strings.HasPrefix(f.Repair, "not repaired: ") {
		t.Fatalf("findings: %+v", found)
	}
}

// The accept and the quarantine take the key's exclusive lock: held
// elsewhere, they wait, give up, and change nothing.
func TestAcceptAndQuarantineTakeTheLock(t *testing.T) {
	root := filepath.Join(t.TempDir(), "sessions")
	s, err := New(root, Options{LockTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "one")
	os.WriteFile(filepath.Join(root, testKey, TranscriptName), transcriptBytes(time.Now(), "edited"), 0o600)
	d, err := db.OpenWriter(openDirT(t, filepath.Join(root, testKey)), "meta.db", db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	before := treeState(t, root)
	if _, err := s.Accept(testKey); !errors.Is(err, db.ErrLockTimeout) {
		t.Errorf("accept under a held lock: %v", err)
	}
	if _, err := s.Quarantine(testKey); !errors.Is(err, db.ErrLockTimeout) {
		t.Errorf("quarantine under a held lock: %v", err)
	}
	if treeState(t, root) != before {
		t.Fatal("changed under a held lock")
	}
}

// check --repair --quarantine moves the key dir aside whole, never over a
// name, to a name no resolve finds; check reports it as a notice ever
// after, and reap leaves it.
func TestQuarantine(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{TTL: opsTTL})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "one")
	os.WriteFile(filepath.Join(root, testKey, TranscriptName), transcriptBytes(time.Now(), "edited"), 0o600)
	legacyKey := Key("github", "a/b", "legacy")
	writeLegacy(t, root, legacyKey, map[string]string{TranscriptName: "x\n", "venue": "local"})
	// What the dir holds, by name (the dir's own mtime changes with the
	// lock file a legacy key gets and loses).
	dirState := func(p string) string {
		_, entries, _ := strings.Cut(strings.ReplaceAll(treeState(t, p), p, ""), "\n")
		return entries
	}
	keyBefore, legacyBefore := dirState(filepath.Join(root, testKey)), dirState(filepath.Join(root, legacyKey))

	if _, err := s.Check(context.Background(), CheckOptions{Quarantine: testKey}, func(Finding) error { return nil }); err == nil {
		t.Fatal("a quarantine without repair ran")
	}
	found := checkFindings(t, s, CheckOptions{Repair: true, Quarantine: testKey})
	mismatch := chkFind(found, testKey+"/"+TranscriptName, KindTranscriptMismatch)
	aside := QuarantinePrefix + testKey + "-20261101T120000Z"
	q := chkFind(found, aside, KindQuarantined)
	if mismatch == nil || !mismatch.Repaired || mismatch.Remains || q == nil || !q.Repaired || q.Key != testKey {
		t.Fatalf("findings: %+v", found)
	}
	if got := dirState(filepath.Join(root, aside)); got != keyBefore {
		t.Fatalf("the quarantined dir differs from the key dir:\n%s\nwas\n%s", got, keyBefore)
	}
	sess, _ := checkDescribed(t, s, root, testKey)
	want(t, sess, false, gates.Absent)

	// The same key again, at the same second: a name of its own. A legacy
	// key is moved as it is, without the meta.db made for its lock.
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "again")
	second, err := s.Quarantine(testKey)
	if err != nil || second != aside+"-2" {
		t.Fatalf("second quarantine = %q, %v", second, err)
	}
	third, err := s.Quarantine(legacyKey)
	if got := dirState(filepath.Join(root, third)); err != nil || got != legacyBefore {
		t.Fatalf("legacy quarantine = %q, %v:\n%s\nwas\n%s", third, err, got, legacyBefore)
	}

	for _, n := range []string{aside, second, third} {
		if f := chkFind(checkFindings(t, s, CheckOptions{Repair: true}), n, KindQuarantined); f == nil || f.Severity != SeverityNotice || f.Repaired {
			t.Fatalf("check does not report %s as a quarantine", n)
		}
	}
	before := treeState(t, root)
	res, err := s.Reap(false)
	if err != nil || len(res.Skipped) != 3 || len(res.Failed)+len(res.Refused) != 0 || treeState(t, root) != before {
		t.Fatalf("reap of quarantine dirs = %+v, %v", res, err)
	}
}

// An accept that fails keeps a meta.db a promotion committed to while the
// accept waited for the key's lock, though the accept found none (the
// key's meta.db moved aside) and its open may have made it: only a file
// that holds nothing is the accept's lock file to remove. Here the
// promotion committed and died before its rename, and the accept's
// roll-forward could not read the temp: the committed promotion is still
// there for the next writer to roll forward. The meta.db an accept made
// for its lock and found empty under it goes again.
func TestFailedAcceptKeepsAMetaDBAPromotionCommittedTo(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "one")
	os.Truncate(chkDB(root, testKey), 0)
	checkFindings(t, s, CheckOptions{Repair: true})
	if _, err := os.Stat(chkDB(root, testKey)); !os.IsNotExist(err) {
		t.Fatalf("the fixture: meta.db not moved aside: %v", err)
	}
	// The lock's own meta.db, made for a key with none, does go again:
	// here the accept is refused under the lock (no transcript).
	empty := Key("github", "a/b", "empty")
	runJob(t, s, empty, localJob(), PromoteRequest{}, "one")
	os.Truncate(chkDB(root, empty), 0)
	checkFindings(t, s, CheckOptions{Repair: true})
	os.Remove(filepath.Join(root, empty, TranscriptName))
	if _, err := s.Accept(empty); !errors.Is(err, ErrNotAccepted) {
		t.Fatalf("the accept of a key with no transcript: %v", err)
	}
	if _, err := os.Lstat(chkDB(root, empty)); !os.IsNotExist(err) {
		t.Fatalf("the refused accept left the meta.db it made for the lock: %v", err)
	}

	sess, jobDir := mustResolve(t, s, testKey, localJob())
	stage(t, jobDir, append(staged(t, jobDir), entryLine("committed")...))

	var mu sync.Mutex
	first := true
	reached, release := make(chan struct{}), make(chan struct{})
	faults.Set(func(p faults.Point) error {
		switch p {
		case faults.DBOpenBeforeMeta:
			// The promotion's open holds the key's lock: it waits here
			// until the accept, which found no meta.db, waits for it.
			mu.Lock()
			hold := first
			first = false
			mu.Unlock()
			if hold {
				close(reached)
				<-release
			}
		case faults.PromoteAfterCommit:
			return errors.New("killed between the commit and the rename")
		case faults.RollForwardTempRead:
			return errors.New("the temp could not be read")
		}
		return nil
	})
	t.Cleanup(func() { faults.Set(nil) })
	promoted := make(chan error, 1)
	go func() {
		_, err := s.Promote(sess, PromoteRequest{PiVersion: testPi})
		promoted <- err
	}()
	<-reached
	accepted, done := make(chan error, 1), make(chan struct{})
	go func() {
		_, err := s.Accept(testKey)
		accepted <- err
		close(done)
	}()
	releaseWhenWaiting(done, release)
	if err := <-promoted; err == nil {
		t.Fatal("the fixture: the promotion did not die after its commit")
	}
	if err := <-accepted; err == nil {
		t.Fatal("the fixture: the accept did not fail")
	}
	faults.Set(nil)
	if _, err := os.Stat(chkDB(root, testKey)); err != nil {
		t.Fatalf("the failed accept removed the meta.db a promotion committed to: %v", err)
	}
	if sc := sidecarsOf(t, root, testKey); sc.Pending == nil {
		t.Fatalf("the committed promotion is gone: %+v", sc)
	}
}

// A quarantine of a key with no meta.db (a legacy key) moves the dir
// as it is, and removes only the meta.db it made for its lock: not one a
// promotion made and committed to while the quarantine waited for the
// key's lock, which goes with the dir, record and all.
func TestQuarantineKeepsAMetaDBAPromotionCommittedTo(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{})
	writeLegacy(t, root, testKey, map[string]string{TranscriptName: string(transcriptBytes(clock.now, entryLine("legacy")))})
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	stage(t, jobDir, append(staged(t, jobDir), entryLine("promoted")...))

	var mu sync.Mutex
	first := true
	reached, release := make(chan struct{}), make(chan struct{})
	faults.Set(func(p faults.Point) error {
		if p == faults.DBOpenBeforeMeta {
			// The promotion's open holds the key's lock: it waits here
			// until the quarantine, which found no meta.db, waits for it.
			mu.Lock()
			hold := first
			first = false
			mu.Unlock()
			if hold {
				close(reached)
				<-release
			}
		}
		return nil
	})
	t.Cleanup(func() { faults.Set(nil) })
	promoted := make(chan error, 1)
	go func() {
		_, err := s.Promote(sess, PromoteRequest{PiVersion: testPi})
		promoted <- err
	}()
	<-reached
	var aside string
	quarantined, done := make(chan error, 1), make(chan struct{})
	go func() {
		var err error
		aside, err = s.Quarantine(testKey)
		quarantined <- err
		close(done)
	}()
	releaseWhenWaiting(done, release)
	if err := <-promoted; err != nil {
		t.Fatalf("the fixture: the promotion: %v", err)
	}
	if err := <-quarantined; err != nil {
		t.Fatal(err)
	}
	faults.Set(nil)
	if _, err := os.Lstat(chkDB(root, aside)); err != nil {
		t.Fatalf("the quarantine removed the meta.db the promotion committed to: %v", err)
	}
	if sc := sidecarsOf(t, root, aside); sc.Transcript == nil {
		t.Fatalf("the quarantined dir lost the meta.db the promotion committed to: %+v", sc)
	}
}

// An accept whose lstat of current.jsonl after reading it fails (an I/O
// error, no kernel memory) is refused naming that lstat and its error: it
// said "current.jsonl changed while it was read", which nothing showed.
// Nothing is written, and the accept finding check prints says the same.
// A name gone by then is said so.
func TestAcceptWhoseLookAfterTheReadFailsNamesIt(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "one")
	os.WriteFile(filepath.Join(root, testKey, TranscriptName), transcriptBytes(s.opts.Now(), "edited"), 0o600)
	faults.Set(func(p faults.Point) error {
		if p == faults.AcceptIdentityLstat {
			return unix.EIO
		}
		return nil
	})
	t.Cleanup(func() { faults.Set(nil) })
	before := treeState(t, root)
	_, err := s.Accept(testKey)
	if !errors.Is(err, ErrNotAccepted) || !strings.Contains(err.Error(), "lstat after the read failed (input/output error)") || strings.Contains(err.Error(), "changed while") {
		t.Fatalf("accept with the lstat after the read failing: %v; want ErrNotAccepted naming the lstat and its error", err)
	}
	found := checkFindings(t, s, CheckOptions{Repair: true, Accept: testKey})
	if f := chkFind(found, testKey+"/"+TranscriptName, KindAccepted); f == nil || f.Repaired || !strings.Contains(f.Repair, "its lstat after the read failed") {
		t.Fatalf("findings: %+v", found)
	}
	if treeState(t, root) != before {
		t.Fatal("a refused accept wrote something")
	}

	faults.Set(func(p faults.Point) error {
		if p == faults.AcceptIdentityLstat {
			os.Rename(filepath.Join(root, testKey, TranscriptName), filepath.Join(t.TempDir(), "moved"))
		}
		return nil
	})
	if _, err := s.Accept(testKey); !errors.Is(err, ErrNotAccepted) || !strings.Contains(err.Error(), "removed or renamed while it was read") {
		t.Fatalf("accept with current.jsonl moved away after the read: %v", err)
	}
}
