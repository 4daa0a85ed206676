package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/faults"
	"sessdb/internal/fsat"

	"golang.org/x/sys/unix"
)

// inPlaceDamage is each fault check --repair now settles in meta.db in
// place (the history entries that do not decode removed, an invalid meta
// page written again), with the finding it makes.
var inPlaceDamage = []struct {
	name   string
	kind   Kind
	damage func(t *testing.T, root, key string)
}{
	{"a history entry that does not decode", KindRecordUndecodable, func(t *testing.T, root, key string) {
		chkWriteRaw(t, root, key, "history", string(binary.BigEndian.AppendUint64(nil, 1)), []byte("not msgpack"))
	}},
	{"the spare meta page zeroed", KindMetaPageInvalid, func(t *testing.T, root, key string) {
		m := chkMeta(t, root, key)
		writeAtFile(t, chkDB(root, key), make([]byte, m.PageSize), int64((1-m.Active)*m.PageSize))
	}},
}

// examined returns what one look at key finds, with the root it opened
// for the repair that acts on it.
func examined(t *testing.T, s *Store, root, key string, kind Kind) (*os.File, []Finding) {
	t.Helper()
	rootF, err := fsat.OpenDir(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rootF.Close() })
	found, err := s.examine(context.Background(), rootF, key, nil)
	if err != nil || chkFind(found, key+"/"+db.FileName, kind) == nil {
		t.Fatalf("examine: %v, %+v; want %s", err, found, kind)
	}
	return rootF, found
}

// A repair that wrote meta.db in place wrote a file the first deep check
// did not see: the look after it runs the deep check again, as after a
// renumbering, instead of judging the new file by the old verdict.
func TestARepairInPlaceRunsTheDeepCheckAgain(t *testing.T) {
	for _, tc := range inPlaceDamage {
		t.Run(tc.name, func(t *testing.T) {
			s, root, _ := newTestStore(t, gates.Bounds{})
			key := chkKey(t, s, "deep-again")
			tc.damage(t, root, key)
			runs := 0
			deep := func(context.Context, string) (DeepResult, error) { runs++; return DeepResult{}, nil }
			found := checkFindings(t, s, CheckOptions{Repair: true, DeepCheck: deep})
			if f := chkFind(found, key+"/"+db.FileName, tc.kind); f == nil || !f.Repaired {
				t.Fatalf("the fixture: %+v; want it repaired in place", found)
			}
			if runs != 2 {
				t.Fatalf("the deep check ran %d times; the repair committed to meta.db, so twice", runs)
			}
		})
	}
}

// A meta.db moved aside (by another check --repair) between the look and
// the repair is gone, not a repair that failed; and the repair's writer
// makes no new meta.db at the key's name.
func TestARepairInPlaceOfAMetaDBMovedAsideSinceTheLookSaysSo(t *testing.T) {
	for _, tc := range inPlaceDamage {
		t.Run(tc.name, func(t *testing.T) {
			s, root, _ := newTestStore(t, gates.Bounds{})
			key := chkKey(t, s, "gone")
			tc.damage(t, root, key)
			rootF, found := examined(t, s, root, key, tc.kind)
			if err := os.Rename(chkDB(root, key), filepath.Join(root, key, AsidePrefix+"other")); err != nil {
				t.Fatal(err)
			}
			s.repair(context.Background(), rootF, key, found)
			f := chkFind(found, key+"/"+db.FileName, tc.kind)
			if f.RepairFailed || f.Repaired || !strings.Contains(f.Repair, "gone since it was found") {
				t.Fatalf("the repair of a meta.db moved aside since the look: %+v; want it gone since it was found", f)
			}
			if _, err := os.Lstat(chkDB(root, key)); !os.IsNotExist(err) {
				t.Fatalf("meta.db at the key's name after the repair: %v; want none", err)
			}
		})
	}
}

// A meta.db replaced since the look (here by a copy of itself: the same
// bytes, another file) is not the file the look (its deep check
// included) proved: the repair writes nothing to it, and says why.
func TestARepairInPlaceOfAMetaDBReplacedSinceTheLookWritesNothing(t *testing.T) {
	for _, tc := range []struct {
		kind   Kind
		says   string
		damage func(t *testing.T, root, key string)
	}{
		{inPlaceDamage[0].kind, "changed since its history was found damaged", inPlaceDamage[0].damage},
		{inPlaceDamage[1].kind, "changed since its meta page was found invalid", inPlaceDamage[1].damage},
	} {
		t.Run(string(tc.kind), func(t *testing.T) {
			s, root, _ := newTestStore(t, gates.Bounds{})
			key := chkKey(t, s, "replaced")
			tc.damage(t, root, key)
			rootF, found := examined(t, s, root, key, tc.kind)
			raw := mustRead(t, chkDB(root, key))
			tmp := filepath.Join(root, key, "copy")
			if err := os.WriteFile(tmp, raw, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, chkDB(root, key)); err != nil {
				t.Fatal(err)
			}
			s.repair(context.Background(), rootF, key, found)
			f := chkFind(found, key+"/"+db.FileName, tc.kind)
			if f.Repaired || !f.RepairFailed || !strings.Contains(f.Repair, tc.says) {
				t.Fatalf("the repair of a meta.db replaced since the look: %+v; want not repaired: %s", f, tc.says)
			}
			if !bytes.Equal(mustRead(t, chkDB(root, key)), raw) {
				t.Fatal("the repair wrote the meta.db no look examined")
			}
			if aside, _ := filepath.Glob(filepath.Join(root, key, AsidePrefix+"*")); len(aside) != 0 {
				t.Fatalf("the repair moved meta.db aside: %v", aside)
			}
		})
	}
}

// The key dir moved away from the key's name while the repair's writer
// opens its meta.db: nothing is written in the dir moved away.
func TestARepairInPlaceWritesNothingInAKeyDirMovedAwayInItsOpen(t *testing.T) {
	for _, tc := range inPlaceDamage {
		t.Run(tc.name, func(t *testing.T) {
			s, root, _ := newTestStore(t, gates.Bounds{})
			key := chkKey(t, s, "moved")
			tc.damage(t, root, key)
			rootF, found := examined(t, s, root, key, tc.kind)
			raw := mustRead(t, chkDB(root, key))
			away := filepath.Join(root, "moved-away")
			fired := false
			faults.Set(func(p faults.Point) error {
				if p == faults.DBOpenBeforeLock && !fired {
					fired = true
					if err := os.Rename(filepath.Join(root, key), away); err != nil {
						t.Error(err)
					}
				}
				return nil
			})
			t.Cleanup(func() { faults.Set(nil) })
			fds := openFDsOr(-1)
			s.repair(context.Background(), rootF, key, found)
			faults.Set(nil)
			if !fired {
				t.Fatal("the hook did not fire")
			}
			if f := chkFind(found, key+"/"+db.FileName, tc.kind); f.Repaired {
				t.Fatalf("the repair in a key dir moved away: %+v; want nothing done", f)
			}
			if !bytes.Equal(mustRead(t, filepath.Join(away, db.FileName)), raw) {
				t.Fatal("the repair wrote meta.db in the key dir moved away from the key's name")
			}
			// The refused open let go of what it had: the moved dir's
			// meta.db and its lock, and the key dir's descriptor.
			f, err := os.Open(filepath.Join(away, db.FileName))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
				t.Fatalf("meta.db in the key dir moved away is still locked after the repair: %v", err)
			}
			if now := openFDsOr(0) - 1; fds >= 0 && now != fds { // f is one
				t.Fatalf("%d descriptors open after the repair (not counting the test's), %d before it", now, fds)
			}
		})
	}
}

// A meta page found invalid that a promotion's commit wrote again before
// the repair is gone: nothing left to do, not a repair that failed.
func TestARepairOfAMetaPageAPromotionWroteSinceSaysItIsGone(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	key := chkKey(t, s, "written")
	inPlaceDamage[1].damage(t, root, key)
	rootF, found := examined(t, s, root, key, KindMetaPageInvalid)
	if _, res := runJob(t, s, key, localJob(), PromoteRequest{}, "since"); !res.Promoted {
		t.Fatalf("the promotion after the look: %+v", res)
	}
	s.repair(context.Background(), rootF, key, found)
	if f := chkFind(found, key+"/"+db.FileName, KindMetaPageInvalid); f.RepairFailed || !strings.Contains(f.Repair, "gone since it was found") {
		t.Fatalf("the repair of a meta page written since: %+v; want it gone since it was found", f)
	}
}

// An invalid meta page beside history entries that do not decode is not
// settled in place: beside other damage the page goes aside with the
// file, as the repair's order says.
func TestAnInvalidMetaPageBesideDamagedHistoryGoesAside(t *testing.T) {
	for _, c := range []struct {
		name    string
		history func(t *testing.T, root, key string)
	}{
		{inPlaceDamage[0].name, inPlaceDamage[0].damage},
		// A history at the last sequence number, which alone is numbered
		// again in place, is other damage beside the page as much.
		{"a history at the last sequence number", atTheLastSequenceNumber},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, root, _ := newTestStore(t, gates.Bounds{})
			key := chkKey(t, s, "both")
			c.history(t, root, key)
			inPlaceDamage[1].damage(t, root, key)
			found, _ := chkRun(t, s, true)
			for _, kind := range []Kind{KindMetaPageInvalid, KindRecordUndecodable} {
				if f := chkFind(found, key+"/"+db.FileName, kind); f == nil || !f.Repaired || !strings.Contains(f.Repair, "moved meta.db aside") {
					t.Fatalf("check --repair: %+v; want %s moved aside with meta.db", found, kind)
				}
			}
		})
	}
}

// History entries that do not decode in a file bbolt's check finds
// inconsistent: the file goes aside whole, as a history at the last
// sequence number in such a file does, and the repair writes nothing into
// it first.
func TestDamagedHistoryInAFileFailingTheDeepCheckGoesAsideUnwritten(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	key := chkKey(t, s, "history-inconsistent")
	inPlaceDamage[0].damage(t, root, key)
	raw := mustRead(t, chkDB(root, key))
	found := chkRunDeep(t, s, key, DeepResult{Problems: []string{"page 9 unreachable"}})
	path := key + "/" + db.FileName
	hist, deep := chkFind(found, path, KindRecordUndecodable), chkFind(found, path, KindMetaCheckFailed)
	if hist == nil || deep == nil || !strings.Contains(hist.Repair, "moved meta.db aside") || !strings.Contains(deep.Repair, "moved meta.db aside") {
		t.Fatalf("check --repair: %+v; want both findings' meta.db moved aside", found)
	}
	aside, _ := filepath.Glob(filepath.Join(root, key, AsidePrefix+"*"))
	if len(aside) != 1 {
		t.Fatalf("%d files moved aside, want 1", len(aside))
	}
	if !bytes.Equal(mustRead(t, aside[0]), raw) {
		t.Fatal("the repair wrote into the inconsistent meta.db before it moved it aside")
	}
}

// A meta.db with another name (a hard link) whose history holds entries
// that do not decode: the repair's writer opens a file of its own (the
// same bytes, copied) and drops the entries there; the look's proof
// stands for the file it copied, and the key resumes.
func TestARepairDropsDamagedHistoryOfAHardLinkedMetaDB(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	key := chkKey(t, s, "linked")
	inPlaceDamage[0].damage(t, root, key)
	other := filepath.Join(t.TempDir(), "other-name")
	if err := os.Link(chkDB(root, key), other); err != nil {
		t.Fatal(err)
	}
	raw := mustRead(t, other)
	found, _ := chkRun(t, s, true)
	if f := chkFind(found, key+"/"+db.FileName, KindRecordUndecodable); f == nil || !f.Repaired || !strings.Contains(f.Repair, "removed") {
		t.Fatalf("check --repair: %+v; want the entries removed", found)
	}
	if aside, _ := filepath.Glob(filepath.Join(root, key, AsidePrefix+"*")); len(aside) != 0 {
		t.Fatalf("the repair moved meta.db aside: %v", aside)
	}
	if !bytes.Equal(mustRead(t, other), raw) {
		t.Fatal("the drop wrote through meta.db's other name")
	}
	sess, _ := mustResolve(t, s, key, localJob())
	want(t, sess, true, gates.Resumed)
	if _, res := runJob(t, s, key, localJob(), PromoteRequest{}, "after"); !res.Promoted {
		t.Fatalf("the promotion after the repair: %+v", res)
	}
}

// The same, with meta.db replaced since the look by another file that
// has another name too: the writer's open copies that one, which is not
// the file the look examined, and the repair drops nothing.
func TestARepairOfAHardLinkedMetaDBReplacedSinceTheLookDropsNothing(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	key := chkKey(t, s, "linked-replaced")
	inPlaceDamage[0].damage(t, root, key)
	if err := os.Link(chkDB(root, key), filepath.Join(t.TempDir(), "other-name")); err != nil {
		t.Fatal(err)
	}
	rootF, found := examined(t, s, root, key, KindRecordUndecodable)
	raw := mustRead(t, chkDB(root, key))
	tmp := filepath.Join(root, key, "copy")
	if err := os.WriteFile(tmp, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(tmp, filepath.Join(t.TempDir(), "its-other-name")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, chkDB(root, key)); err != nil {
		t.Fatal(err)
	}
	s.repair(context.Background(), rootF, key, found)
	f := chkFind(found, key+"/"+db.FileName, KindRecordUndecodable)
	if f.Repaired || !f.RepairFailed || !strings.Contains(f.Repair, "changed since its history was found damaged") {
		t.Fatalf("the repair of a hard-linked meta.db replaced since the look: %+v; want not repaired", f)
	}
	if !bytes.Equal(mustRead(t, chkDB(root, key)), raw) {
		t.Fatal("the repair wrote the meta.db no look examined")
	}
}

// openFDsOr counts the process's open descriptors (/proc/self/fd), or
// is or where they cannot be counted.
func openFDsOr(or int) int {
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return or
	}
	return len(es)
}
