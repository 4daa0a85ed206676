package store

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sessdb/db"
	"sessdb/gates"
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
	want(t, sess, false, gates.PiVersionChanged) // no stamps: a clean cold start
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
