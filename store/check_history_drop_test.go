package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/faults"
)

// A history entry that does not decode fails every read of the history,
// so every promotion of the key (promote-failed), while its record and
// stamps decode and it resumes. check --repair moved the whole meta.db
// aside for it: the key cold-started (meta-moved-aside) and its next job's
// cold run replaced the conversation. Now the entries that do not decode
// are removed in place, the others, the record and the stamps kept.
func TestARepairDropsHistoryEntriesThatDoNotDecodeAndKeepsTheConversation(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	key := chkKey(t, s, "history")
	before := historyOf(t, root, key)
	if len(before) < 3 {
		t.Fatalf("fixture: history %+v", before)
	}
	chkWriteRaw(t, root, key, "history", string(binary.BigEndian.AppendUint64(nil, before[1].Seq)), []byte("not msgpack"))
	chkWriteRaw(t, root, key, "history", "abc", []byte{0x80}) // a key not 8 bytes long
	kept := slices.Delete(slices.Clone(before), 1, 2)

	sess, _ := mustResolve(t, s, key, localJob())
	want(t, sess, true, gates.Resumed) // what the repair must not take away
	sess, jobDir := mustResolve(t, s, key, localJob())
	stage(t, jobDir, append(staged(t, jobDir), entryLine("refused")...))
	if res, err := s.Promote(sess, PromoteRequest{PiVersion: testPi}); err == nil || res.Promoted {
		t.Fatalf("fixture: a promotion over the damaged history = %+v, %v; want it failed", res, err)
	}

	found, _ := chkRun(t, s, true)
	f := chkFind(found, key+"/"+db.FileName, KindRecordUndecodable)
	if f == nil || !f.Repaired || f.Remains || !strings.Contains(f.Repair, "removed") {
		t.Fatalf("check --repair: %+v; want the entries removed, nothing remaining", found)
	}
	// No entry held the last sequence number: nothing was numbered again.
	if !strings.Contains(f.Repair, "the others kept as they were") || strings.Contains(f.Repair, "numbered again") {
		t.Fatalf("check --repair: %q; want the other entries said kept as they were", f.Repair)
	}
	if aside, _ := filepath.Glob(filepath.Join(root, key, AsidePrefix+"*")); len(aside) != 0 {
		t.Fatalf("the repair moved meta.db aside: %v", aside)
	}
	if after := historyOf(t, root, key); !reflect.DeepEqual(after, kept) {
		t.Fatalf("history after the repair %+v; want %+v", after, kept)
	}
	sess, _ = mustResolve(t, s, key, localJob())
	want(t, sess, true, gates.Resumed)

	// A second repair finds nothing, and changes nothing.
	meta := chkDB(root, key)
	st, raw := mustStat(t, meta), mustRead(t, meta)
	if found, _ := chkRun(t, s, true); len(found) != 0 {
		t.Fatalf("a second check --repair: %+v", found)
	}
	if now := mustStat(t, meta); !bytes.Equal(mustRead(t, meta), raw) || !now.ModTime().Equal(st.ModTime()) {
		t.Fatal("a second check --repair changed meta.db")
	}
	if _, res := runJob(t, s, key, localJob(), PromoteRequest{}, "after"); !res.Promoted || res.Gen != uint64(len(before))+1 {
		t.Fatalf("the promotion after the repair: %+v", res)
	}
}

// A history entry that does not decode beside a sidecar that does not
// either still takes meta.db aside: the record itself is damaged.
func TestARepairMovesAsideDamagedHistoryBesideADamagedSidecar(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	key := chkKey(t, s, "history-and-sidecar")
	chkWriteRaw(t, root, key, "history", string(binary.BigEndian.AppendUint64(nil, 1)), []byte("not msgpack"))
	chkWriteRaw(t, root, key, "sidecars", "venue", []byte{0xc1})
	found, _ := chkRun(t, s, true)
	if f := chkFind(found, key+"/"+db.FileName, KindRecordUndecodable); f == nil || !strings.Contains(f.Repair, "moved meta.db aside") {
		t.Fatalf("check --repair: %+v; want meta.db moved aside", found)
	}
}

// The removal killed at a random moment of a whole check --repair leaves
// the history as it was (the next repair removes the entries) or without
// them: never anything between, the record kept and the key resuming
// either way.
func TestAHistoryDropKilledLeavesTheEntriesOrNone(t *testing.T) {
	kills := newRepairKills(t)
	var old, dropped int
	for r := 0; r <= kills.Rounds; r++ {
		s, root, clock := newTestStore(t, gates.Bounds{})
		key := chkKey(t, s, "killed")
		before := historyOf(t, root, key)
		kept := slices.Delete(slices.Clone(before), 1, 2)
		chkWriteRaw(t, root, key, "history", string(binary.BigEndian.AppendUint64(nil, before[1].Seq)), []byte("not msgpack"))
		kills.run(t, r, root, clock.now)
		if aside, _ := filepath.Glob(filepath.Join(root, key, AsidePrefix+"*")); len(aside) != 0 {
			t.Fatalf("round %d: meta.db moved aside: %v", r, aside)
		}
		sess, _ := mustResolve(t, s, key, localJob())
		want(t, sess, true, gates.Resumed)
		found, _ := chkRun(t, s, false)
		switch {
		case r == 0 && len(found) != 0:
			t.Fatalf("the whole run left %+v", found)
		case r == 0:
		case len(found) == 0:
			dropped++
		default:
			old++
			chkRun(t, s, true)
		}
		if after := historyOf(t, root, key); !reflect.DeepEqual(after, kept) {
			t.Fatalf("round %d: history %+v; want %+v", r, after, kept)
		}
		sess, _ = mustResolve(t, s, key, localJob())
		want(t, sess, true, gates.Resumed)
	}
	t.Logf("a whole run %v; %d kills left the entry, %d removed it", kills.span, old, dropped)
}

// A promotion committed and not renamed (a crash between the two) in a key
// whose history holds an entry that does not decode: the roll-forward's
// open refuses the file as every writer's does, so the entries are
// removed first, and one check --repair rolls the promotion forward.
func TestARepairDropsDamagedHistoryBeforeItRollsForward(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	key := chkKey(t, s, "pending")
	faults.Set(func(p faults.Point) error {
		if p == faults.PromoteAfterCommit {
			return errors.New("crash between the commit and the rename")
		}
		return nil
	})
	sess, jobDir := mustResolve(t, s, key, localJob())
	stage(t, jobDir, append(staged(t, jobDir), entryLine("pending")...))
	_, err := s.Promote(sess, PromoteRequest{PiVersion: testPi})
	faults.Set(nil)
	if err == nil {
		t.Fatal("the fault did not stop the promotion")
	}
	chkWriteRaw(t, root, key, "history", string(binary.BigEndian.AppendUint64(nil, 1)), []byte("not msgpack"))

	found, sum := chkRun(t, s, true)
	failed := slices.ContainsFunc(found, func(f Finding) bool { return f.RepairFailed })
	if sum.Remaining != 0 || failed {
		t.Fatalf("check --repair: %+v, %+v; want nothing remaining, no repair failed", sum, found)
	}
	if f := chkFind(found, key+"/"+db.FileName, KindPendingPromotion); f == nil || !f.Repaired {
		t.Fatalf("check --repair: %+v; want the promotion rolled forward", found)
	}
	sess, jobDir = mustResolve(t, s, key, localJob())
	want(t, sess, true, gates.Resumed)
	if !bytes.Contains(staged(t, jobDir), []byte("pending")) {
		t.Fatal("the committed promotion is not what the key resumes")
	}
}

// Two check --repair runs at once that both found the same damaged
// history entry: the second, its lock had after the first removed it,
// found meta.db changed since its look and said "not repaired: ...
// changed since its history was found damaged" (exit 1, a repair that
// failed), where there was nothing left to do, as a second move aside or
// meta page write says.
func TestTwoRepairsDroppingTheSameHistoryAtOnceDoNotFail(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	key := chkKey(t, s, "twice")
	before := historyOf(t, root, key)
	chkWriteRaw(t, root, key, "history", string(binary.BigEndian.AppendUint64(nil, before[1].Seq)), []byte("not msgpack"))
	var inner []Finding
	fired := false
	faults.Set(func(p faults.Point) error {
		// The outer run's writer open, its look done: the other run
		// drops the entry first.
		if p == faults.DBOpenWriter && !fired {
			fired = true
			inner, _ = chkRun(t, s, true)
		}
		return nil
	})
	t.Cleanup(func() { faults.Set(nil) })
	found, sum := chkRun(t, s, true)
	faults.Set(nil)
	if f := chkFind(inner, key+"/"+db.FileName, KindRecordUndecodable); f == nil || !f.Repaired {
		t.Fatalf("fixture: the other check --repair: %+v; want the entry removed", inner)
	}
	f := chkFind(found, key+"/"+db.FileName, KindRecordUndecodable)
	if f == nil || f.RepairFailed || f.Remains || !strings.Contains(f.Repair, "gone since it was found") {
		t.Fatalf("check --repair: %+v; want gone since it was found, no repair failed", found)
	}
	if sum.Remaining != 0 {
		t.Fatalf("check --repair: %+v; want nothing remaining", sum)
	}
	if after := historyOf(t, root, key); !reflect.DeepEqual(after, slices.Delete(slices.Clone(before), 1, 2)) {
		t.Fatalf("history %+v", after)
	}
}

// A history whose newest entry holds the last sequence number hid behind
// an entry that does not decode (check's look reads the history once, and
// stops at the damage): the repair removed the entry and said "the key ...
// takes writes again", while no write could follow the last sequence
// number; the look after found it (Remains, exit 3), and only a second
// check --repair numbered the history again. Now the commit that removes
// the entries numbers the history again where it needs it.
func TestARepairThatDropsHistoryNumbersAFullHistoryBehindItAgain(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	key := chkKey(t, s, "full-behind")
	before := historyOf(t, root, key)
	// The newest entry's bytes again under the last sequence number.
	var newest []byte
	bdb, err := bolt.Open(chkDB(root, key), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	err = bdb.View(func(tx *bolt.Tx) error {
		newest = bytes.Clone(tx.Bucket([]byte("history")).Get(binary.BigEndian.AppendUint64(nil, before[len(before)-1].Seq)))
		return nil
	})
	if cerr := bdb.Close(); err == nil {
		err = cerr
	}
	if err != nil || newest == nil {
		t.Fatalf("fixture: newest entry %q, %v", newest, err)
	}
	chkWriteRaw(t, root, key, "history", string(binary.BigEndian.AppendUint64(nil, math.MaxUint64)), newest)
	chkWriteRaw(t, root, key, "history", string(binary.BigEndian.AppendUint64(nil, before[1].Seq)), []byte("not msgpack"))

	found, sum := chkRun(t, s, true)
	f := chkFind(found, key+"/"+db.FileName, KindRecordUndecodable)
	if f == nil || !f.Repaired || f.Remains || sum.Remaining != 0 || !strings.Contains(f.Repair, "numbered again") {
		t.Fatalf("check --repair: %+v, %+v; want the entry removed and the history numbered again, nothing remaining", found, sum)
	}
	// Every entry that decodes is kept, numbered again; the ring was not
	// full, so none is said dropped.
	if kept := fmt.Sprintf("the newest %d of the others numbered again from 1", len(before)); !strings.Contains(f.Repair, kept) || strings.Contains(f.Repair, "older ones dropped") {
		t.Fatalf("check --repair: %q; want it to say %q, and no older entry dropped", f.Repair, kept)
	}
	h := historyOf(t, root, key)
	if n := len(h); n != len(before) || h[n-1].Seq != uint64(n) {
		t.Fatalf("history after the repair %+v; want %d entries numbered 1..%d", h, len(before), len(before))
	}
	if _, res := runJob(t, s, key, localJob(), PromoteRequest{}, "after"); !res.Promoted {
		t.Fatalf("the promotion after the repair: %+v", res)
	}
}

// The history drop writes only the file its look proved: one put at
// meta.db's name since, its history damaged too, is left for the next
// check, unwritten.
func TestAHistoryDropWritesOnlyTheFileItsLookProved(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	key := chkKey(t, s, "drop-proved")
	meta := chkDB(root, key)
	before := historyOf(t, root, key)
	chkWriteRaw(t, root, key, "history", string(binary.BigEndian.AppendUint64(nil, before[1].Seq)), []byte("not msgpack"))
	raw := mustRead(t, meta)
	fired := false
	faults.Set(func(p faults.Point) error {
		// The repair's writer open: the look is done.
		if p == faults.DBOpenWriter && !fired {
			fired = true
			tmp := filepath.Join(root, key, "copy")
			if err := os.WriteFile(tmp, raw, 0o600); err != nil {
				t.Error(err)
			}
			if err := os.Rename(tmp, meta); err != nil {
				t.Error(err)
			}
		}
		return nil
	})
	t.Cleanup(func() { faults.Set(nil) })
	found, _ := chkRun(t, s, true)
	faults.Set(nil)
	f := chkFind(found, key+"/"+db.FileName, KindRecordUndecodable)
	if f == nil || f.Repaired || !strings.Contains(f.Repair, "changed since") || !bytes.Equal(mustRead(t, meta), raw) {
		t.Fatalf("check --repair: %+v; want the file put there since left unwritten", found)
	}
}

// A deep check that did not complete (timed out, its child killed) proves
// nothing, and is no damage: beside it, a history whose entries do not
// decode is still removed in place, and one at the last sequence number
// still numbered again, the record and stamps kept, nothing moved aside.
// (Counted as damage, it took meta.db aside whole, the conversation with
// it, on a check that said nothing is moved without proof.)
func TestDamagedHistoryBesideADeepCheckThatDidNotCompleteIsRepairedInPlace(t *testing.T) {
	for _, c := range []struct {
		name   string
		damage func(t *testing.T, root, key string, before []db.HistoryEntry)
		repair string // what the repair line says it did
	}{
		{"entries that do not decode", func(t *testing.T, root, key string, before []db.HistoryEntry) {
			chkWriteRaw(t, root, key, "history", string(binary.BigEndian.AppendUint64(nil, before[1].Seq)), []byte("not msgpack"))
		}, "removed"},
		{"a history at the last sequence number", func(t *testing.T, root, key string, _ []db.HistoryEntry) {
			atTheLastSequenceNumber(t, root, key)
		}, "numbered again"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, root, _ := newTestStore(t, gates.Bounds{})
			key := chkKey(t, s, "slow-check")
			c.damage(t, root, key, historyOf(t, root, key))

			found := chkRunDeep(t, s, key, DeepResult{Incomplete: "it timed out"})
			f := chkFind(found, key+"/"+db.FileName, KindRecordUndecodable)
			if f == nil || !f.Repaired || f.Remains || !strings.Contains(f.Repair, c.repair) {
				t.Fatalf("check --repair: %+v; want the history %s in place, nothing remaining", found, c.repair)
			}
			if d := chkFind(found, key+"/"+db.FileName, KindMetaCheckFailed); d == nil || d.Repaired || !strings.Contains(d.Repair, "left as is") {
				t.Fatalf("check --repair: %+v; want the check that did not complete left as is", found)
			}
			if aside, _ := filepath.Glob(filepath.Join(root, key, AsidePrefix+"*")); len(aside) != 0 {
				t.Fatalf("the repair moved meta.db aside: %v", aside)
			}
			sess, _ := mustResolve(t, s, key, localJob())
			want(t, sess, true, gates.Resumed)
			if _, res := runJob(t, s, key, localJob(), PromoteRequest{}, "after"); !res.Promoted {
				t.Fatalf("the promotion after the repair: %+v", res)
			}
		})
	}
}
