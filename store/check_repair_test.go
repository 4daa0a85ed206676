package store

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/durable"
	"sessdb/internal/fsat"
)

// A moved-aside meta.db is renamed, never deleted, and never replaces
// anything; the key then cold-starts cleanly and its next promotion makes
// a fresh meta.db.
func TestRepairMovesDamagedDBAside(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	key := chkKey(t, s, "aside")
	os.Truncate(chkDB(root, key), 0)
	sess, _ := mustResolve(t, s, key, localJob())
	want(t, sess, false, gates.MetaUnreadable)
	found, _ := chkRun(t, s, true)
	f := chkFind(found, key+"/"+db.FileName, KindMetaDamaged)
	if f == nil || !f.Repaired || !strings.Contains(f.Repair, AsidePrefix+"20261101T120000Z") {
		t.Fatalf("repair = %+v", f)
	}
	aside := filepath.Join(root, key, AsidePrefix+"20261101T120000Z")
	if fi, err := os.Stat(aside); err != nil || fi.Size() != 0 {
		t.Fatalf("the damaged file was not kept: %v", err)
	}
	if n := chkFind(found, key+"/"+AsidePrefix+"20261101T120000Z", KindMovedAside); n == nil || n.Severity != SeverityNotice {
		t.Fatalf("the moved-aside file is not reported: %+v", found)
	}
	sess, _ = mustResolve(t, s, key, localJob())
	want(t, sess, false, gates.MetaMovedAside) // named, not read as unstamped (issue 12)
	runJob(t, s, key, localJob(), PromoteRequest{}, "fresh start")
	sess, _ = mustResolve(t, s, key, localJob())
	want(t, sess, true, gates.Resumed)

	// A second damage in the same second gets a name of its own.
	os.Truncate(chkDB(root, key), 0)
	found, _ = chkRun(t, s, true)
	if f := chkFind(found, key+"/"+db.FileName, KindMetaDamaged); f == nil || !strings.Contains(f.Repair, "Z-2") {
		t.Fatalf("second move aside: %+v", f)
	}
}

// A key whose meta.db was moved aside stays meta-moved-aside when an empty
// meta.db is beside it: the file check --repair makes only for the key's
// lock and removes again (as reap and a refused promotion do), left by a
// kill between the two or brought back by a power cut, since the removal
// is not fsynced. Judged as a legacy key instead, it resumed on the stale
// legacy stamps the moved-aside meta.db had overridden.
func TestMovedAsideKeyWithALockOnlyMetaDBStaysMovedAside(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	key := chkKey(t, s, "aside-lock")
	dir := filepath.Join(root, key)
	// Leftovers of the legacy layout, stamped as the job is: meta.db
	// overrode them, and the store must not go back to them.
	os.WriteFile(filepath.Join(dir, "venue"), []byte("local"), 0o600)
	os.WriteFile(filepath.Join(dir, "pi-version"), []byte(testPi), 0o600)
	os.Truncate(chkDB(root, key), 0)
	chkRun(t, s, true)
	sess, _ := mustResolve(t, s, key, localJob())
	want(t, sess, false, gates.MetaMovedAside)

	kd, err := fsat.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer kd.Close()
	d, sc, err := db.OpenSidecars(kd, s.dbOptions(), true)
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	if sc != (db.Sidecars{}) {
		t.Fatalf("the lock's meta.db holds %+v", sc)
	}
	sess, _ = mustResolve(t, s, key, localJob())
	want(t, sess, false, gates.MetaMovedAside)
	found, _ := chkRun(t, s, false)
	for _, f := range found {
		if f.Severity == SeverityProblem {
			t.Fatalf("check: %+v", f)
		}
	}
}

// The pending promotion is rolled forward, not lost: the key resumes the
// transcript the interrupted promotion carried.
func TestRepairRollsPendingForward(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	key := chkKey(t, s, "pending")
	for _, c := range chkDamages {
		if c.kind == KindPendingPromotion {
			c.damage(t, s, root, key)
		}
	}
	found, _ := chkRun(t, s, false)
	if chkFind(found, key+"/"+TranscriptName, KindTranscriptMismatch) != nil {
		t.Fatalf("a mismatch the pending promotion explains is reported: %+v", found)
	}
	chkRun(t, s, true)
	sess, jobDir := mustResolve(t, s, key, localJob())
	want(t, sess, true, gates.Resumed)
	if !strings.Contains(string(staged(t, jobDir)), "lost?") {
		t.Fatal("the rolled-forward transcript is not the pending one")
	}
}

// Notices do not count as problems: the shipped sample's odd entries
// (a name that is not a key, legacy files beside a meta.db) leave it clean.
func TestCheckNotices(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	key := chkKey(t, s, "notices")
	os.WriteFile(filepath.Join(root, key, "venue"), []byte("local"), 0o600)
	os.WriteFile(filepath.Join(root, "README.txt"), []byte("hi"), 0o600)
	os.MkdirAll(filepath.Join(root, "notes", "deeper"), 0o700)
	os.Symlink("/", filepath.Join(root, "notes", "deeper", "escape"))
	found, sum := chkRun(t, s, false)
	if chkFind(found, key, KindLegacyBesideDB) == nil || chkFind(found, "README.txt", KindNotAKey) == nil {
		t.Fatalf("notices missing: %+v", found)
	}
	if f := chkFind(found, "notes/deeper/escape", KindLink); f == nil || f.Severity != SeverityProblem {
		t.Fatalf("a link below a non-key dir is not found: %+v", found)
	}
	if sum.Notices != 3 || sum.Problems != 1 || sum.Entries != 3 || sum.Keys != 1 {
		t.Fatalf("summary %+v of %+v", sum, found)
	}
}

// chkRunDeep is chkRun with a deep check that says res about key and
// nothing about any other.
func chkRunDeep(t *testing.T, s *Store, key string, res DeepResult) []Finding {
	t.Helper()
	var found []Finding
	deep := func(_ context.Context, k string) (DeepResult, error) {
		if k == key {
			return res, nil
		}
		return DeepResult{}, nil
	}
	if _, err := s.Check(context.Background(), CheckOptions{Repair: true, DeepCheck: deep}, func(f Finding) error {
		found = append(found, f)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return found
}

func pendingDamage(t *testing.T, s *Store, root, key string) {
	t.Helper()
	for _, c := range chkDamages {
		if c.kind == KindPendingPromotion {
			c.damage(t, s, root, key)
		}
	}
}

// A deep check that completed and found damage is proof: meta.db is moved
// aside, but only after the promotion it committed is rolled forward, so
// the transcript in place is the committed one (issue 15.5: the pending
// promotion was dropped with the file).
func TestRepairRollsForwardBeforeMovingAside(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	key := chkKey(t, s, "proof")
	pendingDamage(t, s, root, key)
	found := chkRunDeep(t, s, key, DeepResult{Problems: []string{"page 9 unreachable"}})
	p, d := chkFind(found, key+"/"+db.FileName, KindPendingPromotion), chkFind(found, key+"/"+db.FileName, KindMetaCheckFailed)
	if p == nil || !p.Repaired || !strings.HasPrefix(p.Repair, "rolled forward") || d == nil || !d.Repaired || !strings.Contains(d.Repair, "moved meta.db aside") {
		t.Fatalf("repair: %+v", found)
	}
	if !strings.HasSuffix(string(readCanonical(t, root, key)), entryLine("lost?")) {
		t.Fatal("the committed promotion's transcript is not in place")
	}
}

// A deep check that did not complete proves nothing: nothing is moved, the
// finding stays, and a pending promotion is still rolled forward.
func TestRepairMovesNothingOnAnIncompleteDeepCheck(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	key := chkKey(t, s, "no-proof")
	pendingDamage(t, s, root, key)
	before, _ := os.ReadFile(chkDB(root, key))
	found := chkRunDeep(t, s, key, DeepResult{Incomplete: "timed out after 30s"})
	d := chkFind(found, key+"/"+db.FileName, KindMetaCheckFailed)
	if d == nil || d.Repaired || !d.Remains || !strings.Contains(d.Detail, "did not complete: timed out after 30s") {
		t.Fatalf("meta-check-failed: %+v", found)
	}
	if _, err := os.Stat(chkDB(root, key)); err != nil {
		t.Fatalf("meta.db moved on a check that did not complete: %v", err)
	}
	if after, _ := os.ReadFile(chkDB(root, key)); len(after) != len(before) {
		t.Logf("meta.db written by the roll-forward only (%d -> %d bytes)", len(before), len(after))
	}
	sess, jobDir := mustResolve(t, s, key, localJob())
	want(t, sess, true, gates.Resumed)
	if !strings.HasSuffix(string(staged(t, jobDir)), entryLine("lost?")) {
		t.Fatal("the pending promotion was not rolled forward")
	}
}

// meta.db temps, as a crash inside db.OpenWriter's creation leaves them:
// removed under the key's lock whatever their age, also from a key with no
// meta.db (which gets none from the repair), also when the temp is a
// second name of meta.db (a crash between the link and the unlink); a
// temp whose flock is held (bbolt initialising it) is left, and not
// reported.
func TestRepairRemovesMetaTemps(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	withDB := chkKey(t, s, "temps")
	legacyKey := Key("github", "acme/check", "legacy-temps")
	os.MkdirAll(filepath.Join(root, legacyKey), 0o700)
	os.WriteFile(filepath.Join(root, legacyKey, TranscriptName), transcriptBytes(s.opts.Now()), 0o600)

	fresh := func(key, name string) string {
		p := filepath.Join(root, key, name)
		chkOldFile(t, p, s.opts.Now()) // age 0
		return p
	}
	fresh(legacyKey, db.TempPrefix+"00000000000000aa")
	fresh(legacyKey, tmpPrefix+"00000000000000ab")
	second := filepath.Join(root, withDB, db.TempPrefix+"00000000000000ac")
	if err := os.Link(chkDB(root, withDB), second); err != nil {
		t.Fatal(err)
	}
	held := fresh(withDB, db.TempPrefix+"00000000000000ad")
	hf, err := os.Open(held)
	if err != nil {
		t.Fatal(err)
	}
	defer hf.Close()
	if err := syscall.Flock(int(hf.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}

	found, sum := chkRun(t, s, true)
	for _, p := range []string{legacyKey + "/" + db.TempPrefix + "00000000000000aa", legacyKey + "/" + tmpPrefix + "00000000000000ab", withDB + "/" + db.TempPrefix + "00000000000000ac"} {
		if f := chkFind(found, p, KindStrayTemp); f == nil || !f.Repaired || f.Remains {
			t.Errorf("%s: %+v", p, f)
		}
	}
	if f := chkFind(found, withDB+"/"+db.FileName, KindLink); f == nil || f.Remains {
		t.Errorf("meta.db with a second name: %+v", f)
	}
	// Work in flight, not damage: not reported at all (check without
	// --repair says the same).
	if f := chkFind(found, withDB+"/"+db.TempPrefix+"00000000000000ad", KindStrayTemp); f != nil {
		t.Errorf("a temp being created: %+v", f)
	}
	if sum.Remaining != 0 {
		t.Errorf("remaining %d, want 0: %+v", sum.Remaining, found)
	}
	if _, err := os.Lstat(chkDB(root, legacyKey)); !os.IsNotExist(err) {
		t.Errorf("the legacy key was left a meta.db: %v", err)
	}
	if _, err := os.Stat(held); err != nil {
		t.Errorf("the temp being created was removed: %v", err)
	}
	sess, _ := mustResolve(t, s, withDB, localJob())
	want(t, sess, true, gates.Resumed)
}

// check --repair moves aside only the meta.db its look proved damaged: a
// file a commit changed since (a damaged spare meta page heals with the
// next commit) is left for the next check, and the key keeps its newest
// promotion (found by an audit: the healthy file, holding gen 3, was moved
// aside and the key cold-started as meta-moved-aside).
func TestRepairLeavesAMetaDBChangedSinceItWasExamined(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "one")
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "two")
	m := chkMeta(t, root, testKey)
	f, err := os.OpenFile(chkDB(root, testKey), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt(make([]byte, m.PageSize), int64((1-m.Active)*m.PageSize)) // the spare meta page
	f.Close()
	rootF, err := fsat.OpenDir(root)
	if err != nil {
		t.Fatal(err)
	}
	defer rootF.Close()
	found, err := s.examine(context.Background(), rootF, testKey, nil)
	if err != nil || !slices.ContainsFunc(found, func(f Finding) bool { return f.Kind == KindMetaPageInvalid }) {
		t.Fatalf("examine: %v, %+v; want a meta-page-invalid finding", err, found)
	}
	// A promotion lands between the look and the repair.
	if _, res := runJob(t, s, testKey, localJob(), PromoteRequest{}, "three"); res.Gen != 3 {
		t.Fatalf("promotion after the look: %+v", res)
	}
	s.repair(context.Background(), rootF, testKey, found)
	for _, f := range found {
		if f.Kind == KindMetaPageInvalid && (f.Repaired || !strings.Contains(f.Repair, "changed since")) {
			t.Fatalf("repair of a meta.db changed since its look: %+v", f)
		}
	}
	if _, err := os.Lstat(chkDB(root, testKey)); err != nil {
		t.Fatalf("meta.db was moved: %v", err)
	}
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	want(t, sess, true, gates.Resumed)
	if sess.Gen() != 3 || !bytes.Contains(staged(t, jobDir), []byte("three")) {
		t.Fatalf("resumed gen %d, want gen 3 with the newest promotion", sess.Gen())
	}
}

// What check says a resolve does with a transcript it leaves as is, in
// its finding and in its repair's advice, is what a resolve then does:
// the finding, of the key as found; the advice, of the key as the repair
// left it (clearing a pending record whose temp is damaged changes it).
func TestCheckSaysWhatResolveDoesAfterACrash(t *testing.T) {
	for _, repair := range []bool{false, true} {
		s, root, _ := newTestStore(t, gates.Bounds{})
		for _, c := range crashStates(t, s, root) {
			key := Key("github", "acme/advice", c.name)
			c.build(key)
			found, _ := chkRun(t, s, repair)
			sess, _ := mustResolve(t, s, key, localJob())
			for _, f := range found {
				if f.Key != key || f.Kind != KindTranscriptMismatch {
					continue
				}
				said := f.Detail
				if repair {
					said = f.Repair
				}
				if !strings.Contains(said, "("+string(sess.Reason)+")") && !strings.HasSuffix(said, "resolve: "+string(sess.Reason)) {
					t.Errorf("%s, repair=%v: check says %q, resolve says %s", c.name, repair, said, sess.Reason)
				}
			}
		}
	}
}

// A repair never makes a key that resumes cold: a pending promotion whose
// temp does not match its record, with the generation before it whole in
// place, is left pending (a resolve resumes that generation), where
// clearing the record made every resolve after it transcript-replaced.
// What a resolve said before the repair, it says after, or resumes.
func TestRepairKeepsAKeyThatResumes(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	states := crashStates(t, s, root)
	before := map[string]gates.Reason{}
	for _, c := range states {
		key := Key("github", "acme/keeps", c.name)
		c.build(key)
		sess, _ := mustResolve(t, s, key, localJob())
		before[key] = sess.Reason
	}
	chkRun(t, s, true)
	for _, c := range states {
		key := Key("github", "acme/keeps", c.name)
		sess, _ := mustResolve(t, s, key, localJob())
		if before[key] == gates.Resumed && !sess.Resume {
			t.Errorf("%s: resumed before check --repair, %s after", c.name, sess.Reason)
		}
	}
}

// sweepSyncFails is the disk on which the key dir's second fsync fails:
// a roll-forward's, after its rename into place, passes, and the one
// after its sweep of temps fails.
type sweepSyncFails struct {
	durable.Disk
	key   string
	syncs *int
}

func (d sweepSyncFails) SyncDir(dir *os.File) error {
	if filepath.Base(dir.Name()) == d.key {
		if *d.syncs++; *d.syncs == 2 {
			return &os.PathError{Op: "fsync", Path: dir.Name(), Err: unix.EIO}
		}
	}
	return d.Disk.SyncDir(dir)
}

// TestRepairWhoseSweepFsyncFailedChecksMetaAgain: a check --repair whose
// roll-forward committed (the temp renamed into place, the record cleared
// in meta.db) and then failed at the fsync after its sweep of temps runs
// the deep check again in the look after the repair: meta.db is not the
// file the first deep check judged.
func TestRepairWhoseSweepFsyncFailedChecksMetaAgain(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{})
	key := chkKey(t, s, "sweepsync")
	pendingDamage(t, s, root, key)
	chkOldFile(t, filepath.Join(root, key, ".current.jsonl.tmp-00000000000000aa"), clock.now.Add(-time.Minute))
	syncs, deeps := 0, 0
	s.disk = diskWrites{sweepSyncFails{key: key, syncs: &syncs}}
	deep := func(_ context.Context, k string) (DeepResult, error) {
		if k == key {
			deeps++
		}
		return DeepResult{}, nil
	}
	var found []Finding
	if _, err := s.Check(context.Background(), CheckOptions{Repair: true, DeepCheck: deep}, func(f Finding) error {
		found = append(found, f)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	p := chkFind(found, key+"/"+db.FileName, KindPendingPromotion)
	if syncs < 2 || p == nil || !strings.Contains(p.Repair, "input/output error") || sidecarsOf(t, root, key).Pending != nil {
		t.Fatalf("the fixture: %d key dir fsyncs, %+v, pending %+v", syncs, p, sidecarsOf(t, root, key).Pending)
	}
	if deeps != 2 {
		t.Fatalf("the deep check ran %d times; meta.db was committed to by the roll-forward, so the look after the repair must judge it again", deeps)
	}
}

// A transcript check leaves as is says, on its repair line, what the next
// resolve says after the repair (docs/operations.md). When the same
// repair moved the key's meta.db aside, the record the transcript was
// held against went with it: the next resolve is meta-moved-aside, not
// the transcript-replaced the look before the repair found (the damaged
// copy docs/operations.md walks: a meta page zeroed, bbolt falling back
// to an older record than the transcript in place). A transcript that is
// missing stays absent: that rung comes before meta.db's.
func TestRepairLineOfATranscriptWhoseMetaWentAside(t *testing.T) {
	for _, c := range []struct {
		name   string
		damage func(t *testing.T, path string)
		says   gates.Reason
	}{
		{"changed", func(t *testing.T, p string) {
			f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString("{}\n")
			f.Close()
		}, gates.MetaMovedAside},
		{"missing", func(t *testing.T, p string) {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
		}, gates.Absent},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, root, _ := newTestStore(t, gates.Bounds{})
			key := chkKey(t, s, "aside-"+c.name)
			c.damage(t, filepath.Join(root, key, "current.jsonl"))
			// The first KiB of meta.db zeroed: meta page 0 invalid.
			f, err := os.OpenFile(chkDB(root, key), os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteAt(make([]byte, 1024), 0)
			f.Close()
			found, _ := chkRun(t, s, true)
			if f := chkFind(found, key+"/"+db.FileName, KindMetaPageInvalid); f == nil || !f.Repaired {
				t.Fatalf("meta.db was not moved aside: %+v", found)
			}
			m := chkFind(found, key+"/current.jsonl", KindTranscriptMismatch)
			if m == nil {
				t.Fatalf("no transcript-mismatch found: %+v", found)
			}
			sess, _ := mustResolve(t, s, key, localJob())
			want(t, sess, false, c.says)
			if !strings.Contains(m.Repair, "("+string(c.says)+")") {
				t.Errorf("the repair line says %q; the next resolve says %s", m.Repair, c.says)
			}
		})
	}
}
