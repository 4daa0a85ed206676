package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/faults"
	"sessdb/internal/fsat"
)

// A key whose history's newest entry holds the last sequence number
// (2^64-1: a history begun at a generation that high, by damage or a
// hostile file) takes no write: every promotion, refusal and reap must
// append an entry after it. The promote's error says why and what settles
// it, and check reports it (record-undecodable: --repair numbers the
// history again). check said nothing, and the promote's error only "no
// sequence number follows it".
func TestAHistoryAtTheLastSequenceNumberIsReported(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	if err := os.MkdirAll(filepath.Join(root, testKey), 0o700); err != nil {
		t.Fatal(err)
	}
	kd, err := fsat.OpenDir(filepath.Join(root, testKey))
	if err != nil {
		t.Fatal(err)
	}
	defer kd.Close()
	d, err := db.OpenWriter(kd, filepath.Join(root, testKey, db.FileName), db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = d.Update(func(tx *db.Tx) error {
		// In an empty history an entry's key is its generation.
		if _, err := tx.AppendHistory(db.HistoryEntry{Gen: math.MaxUint64 - 1, Outcome: string(gates.Superseded)}); err != nil {
			return err
		}
		if _, err := tx.AppendHistory(db.HistoryEntry{Gen: 1, Outcome: string(gates.Superseded)}); err != nil {
			return err
		}
		if err := tx.PutVenue("local"); err != nil {
			return err
		}
		return tx.PutPiVersion(testPi)
	})
	d.Close()
	if err != nil {
		t.Fatal(err)
	}

	sess, dir, data := contractJob(t, s, testKey, "last")
	stage(t, dir, answeredTurn(data, "last", 10))
	res, err := s.Promote(sess, PromoteRequest{PiVersion: testPi})
	if err == nil || res.Reason != gates.PromoteFailed || !strings.Contains(err.Error(), "ffffffffffffffff: the last sequence number") || !strings.Contains(err.Error(), "check --repair") {
		t.Fatalf("promote = %+v, %v; want promote-failed, naming the last sequence number and what settles it", res, err)
	}
	found, _ := chkRun(t, s, false)
	f := chkFind(found, testKey+"/"+db.FileName, KindRecordUndecodable)
	if f == nil || !strings.Contains(f.Detail, "the last sequence number") {
		t.Fatalf("check: %+v; want meta.db record-undecodable, naming the last sequence number", found)
	}
	found, _ = chkRun(t, s, true)
	if f := chkFind(found, testKey+"/"+db.FileName, KindRecordUndecodable); f == nil || !f.Repaired || f.Remains {
		t.Fatalf("check --repair: %+v; want the history numbered again", found)
	}
	// The failed promotion's temp was removed by the repair; the key takes
	// the job's retry.
	res, err = s.Promote(sess, PromoteRequest{PiVersion: testPi})
	if err != nil || !res.Promoted {
		t.Fatalf("promote after the repair = %+v, %v", res, err)
	}
}

// atTheLastSequenceNumber renumbers key's history with bbolt directly so
// that its newest entry holds the last sequence number, values as they
// are (each carries its gen): what a damaged or hostile meta.db holds.
func atTheLastSequenceNumber(t *testing.T, root, key string) {
	t.Helper()
	if err := historyToTheTop(root, key); err != nil {
		t.Fatal(err)
	}
}

// historyToTheTop is atTheLastSequenceNumber returning its error, for the
// conformance suite's key dirs too (export_test.go).
func historyToTheTop(root, key string) error {
	bdb, err := bolt.Open(filepath.Join(root, key, db.FileName), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		return err
	}
	defer bdb.Close()
	return bdb.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("history"))
		var ks, vs [][]byte
		b.ForEach(func(k, v []byte) error {
			ks, vs = append(ks, bytes.Clone(k)), append(vs, bytes.Clone(v))
			return nil
		})
		for _, k := range ks {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		for i, v := range vs {
			if err := b.Put(binary.BigEndian.AppendUint64(nil, math.MaxUint64-uint64(len(vs)-1-i)), v); err != nil {
				return err
			}
		}
		return nil
	})
}

// check --repair settles a history at the last sequence number in place:
// the entries are numbered again from 1, in their order, in one
// transaction under the key's lock, and nothing else of meta.db changes.
// The key resumes after the repair as its record and stamps say, and
// takes its next promotion. Moving meta.db aside (as before) made the key
// writable but took the record and stamps with it: the conversation
// stopped resuming (meta-moved-aside, then pi-version-changed after an
// accept). check without --repair changes nothing.
func TestARepairRenumbersAHistoryAtTheLastSequenceNumber(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	one, _ := runJob(t, s, testKey, localJob(), PromoteRequest{}, "one")
	two, _ := runJob(t, s, testKey, localJob(), PromoteRequest{}, "two")
	atTheLastSequenceNumber(t, root, testKey)
	before, sc := historyOf(t, root, testKey), sidecarsOf(t, root, testKey)
	if before[len(before)-1].Seq != math.MaxUint64 {
		t.Fatalf("fixture: history %+v", before)
	}
	meta := filepath.Join(root, testKey, db.FileName)
	raw := mustRead(t, meta)

	if found, _ := chkRun(t, s, false); chkFind(found, testKey+"/"+db.FileName, KindRecordUndecodable) == nil {
		t.Fatalf("check: %+v; want the history reported", found)
	}
	if !bytes.Equal(mustRead(t, meta), raw) {
		t.Fatal("check without --repair changed meta.db")
	}

	found, _ := chkRun(t, s, true)
	f := chkFind(found, testKey+"/"+db.FileName, KindRecordUndecodable)
	if f == nil || !f.Repaired || f.Remains || !strings.Contains(f.Repair, "numbered again") {
		t.Fatalf("check --repair: %+v; want the history numbered again, nothing remaining", found)
	}
	if aside, _ := filepath.Glob(filepath.Join(root, testKey, AsidePrefix+"*")); len(aside) != 0 {
		t.Fatalf("the repair moved meta.db aside: %v", aside)
	}
	if !keptOrRenumbered(t, s, root, before, sc) {
		t.Fatal("the repair left the history at the last sequence number")
	}
	// A ticket is found by its entry (FindTicket): each job that promoted
	// before the renumber still gets its own result again, a repeat.
	for gen, sess := range []Session{one, two} {
		if res := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi}); !res.Promoted || !res.Repeat || res.Gen != uint64(gen)+1 {
			t.Fatalf("the retry of gen %d's promotion after the repair: %+v; want a repeat of it", gen+1, res)
		}
	}
	_, res := runJob(t, s, testKey, localJob(), PromoteRequest{}, "three")
	if res.Gen != 3 {
		t.Fatalf("the promotion after the repair: %+v", res)
	}
	if h := historyOf(t, root, testKey); h[len(h)-1].Seq != uint64(len(before))+1 {
		t.Fatalf("history after the next promotion %+v", h)
	}
	if found, _ := chkRun(t, s, false); len(found) != 0 {
		t.Fatalf("check after: %+v", found)
	}
}

// The renumbering repair killed (or failing) at either side of its commit,
// and at random moments of the whole check --repair, leaves meta.db as it
// was (the history at the last sequence number, the next repair renumbers
// it) or as repaired, never anything between: the key resumes its
// conversation as its record says either way, with every entry of its
// history.
func TestARenumberingRepairInterruptedLeavesTheOldHistoryOrTheNew(t *testing.T) {
	setUp := func(t *testing.T) (*Store, string, *testClock, []db.HistoryEntry, db.Sidecars) {
		s, root, clock := newTestStore(t, gates.Bounds{})
		runJob(t, s, testKey, localJob(), PromoteRequest{}, "one")
		runJob(t, s, testKey, localJob(), PromoteRequest{}, "two")
		atTheLastSequenceNumber(t, root, testKey)
		return s, root, clock, historyOf(t, root, testKey), sidecarsOf(t, root, testKey)
	}
	for _, p := range []faults.Point{faults.RepairBeforeRenumber, faults.RepairAfterRenumber} {
		for _, kill := range []bool{false, true} {
			t.Run(string(p)+map[bool]string{false: "/error", true: "/kill"}[kill], func(t *testing.T) {
				s, root, clock, before, sc := setUp(t)
				interrupt(t, s, root, clock, "repair-kill-at", p, kill, func() {
					s.Check(context.Background(), CheckOptions{Repair: true}, func(Finding) error { return nil })
				})
				if got := keptOrRenumbered(t, s, root, before, sc); got != (p == faults.RepairAfterRenumber) {
					t.Fatalf("interrupted at %s: repaired %v", p, got)
				}
				if found, _ := chkRun(t, s, true); !keptOrRenumbered(t, s, root, before, sc) {
					t.Fatalf("the next repair: %+v; want the history renumbered", found)
				}
				runJob(t, s, testKey, localJob(), PromoteRequest{}, "three")
			})
		}
	}
	t.Run("random-kills", func(t *testing.T) {
		kills := newRepairKills(t)
		var old, repaired int
		for r := 0; r <= kills.Rounds; r++ {
			s, root, clock, before, sc := setUp(t)
			kills.run(t, r, root, clock.now)
			if r == 0 {
				continue
			}
			if keptOrRenumbered(t, s, root, before, sc) {
				repaired++
			} else {
				old++
			}
			chkRun(t, s, true)
			if !keptOrRenumbered(t, s, root, before, sc) {
				t.Fatalf("round %d: the next repair left the history at the last sequence number", r)
			}
		}
		t.Logf("a whole run %v; %d kills left the old history, %d the repaired one", kills.span, old, repaired)
	})
}

// keptOrRenumbered says whether key's history is before (at the last
// sequence number) or before numbered again from 1, failing t on anything
// else, and fails t unless the record and stamps are sc and the key
// resumes gen 2, ending "two", as its record says.
func keptOrRenumbered(t *testing.T, s *Store, root string, before []db.HistoryEntry, sc db.Sidecars) (repaired bool) {
	t.Helper()
	h := historyOf(t, root, testKey)
	if len(h) != len(before) {
		t.Fatalf("history %+v, want %+v or it renumbered", h, before)
	}
	repaired = h[0].Seq == 1
	for i := range h {
		want := before[i]
		if repaired {
			want.Seq = uint64(i) + 1
		}
		if !reflect.DeepEqual(h[i], want) {
			t.Fatalf("history %+v, want %+v or it renumbered", h, before)
		}
	}
	if got := sidecarsOf(t, root, testKey); !reflect.DeepEqual(got, sc) {
		t.Fatalf("record and stamps %+v; want %+v", got, sc)
	}
	sess, data := checkDescribed(t, s, root, testKey)
	want(t, sess, true, gates.Resumed)
	if sess.Gen() != 2 || markerOf(data, 1) != "two" {
		t.Fatalf("resumed gen %d ending %q", sess.Gen(), markerOf(data, 1))
	}
	return repaired
}

// A hostile history at the last sequence number that holds far more than
// the ring is renumbered to the ring's newest entries, the older dropped
// as the next write's trim would drop them, and the repair says so: its
// cost is the ring's, not the file's. Before, every entry was kept and
// written again (a million in about a minute and a gigabyte, under the
// key's lock).
func TestARepairOfAHostileHistoryKeepsTheRing(t *testing.T) {
	for _, c := range []struct {
		extra   int
		dropped string
	}{
		{500, fmt.Sprintf("the %d older ones dropped", 500+1-db.HistoryLimit)},
		{db.HistoryLimit, "the older one dropped"}, // one past the ring: said in the singular
	} {
		t.Run(fmt.Sprint(c.extra), func(t *testing.T) { repairOfAHostileHistoryKeepsTheRing(t, c.extra, c.dropped) })
	}
}

func repairOfAHostileHistoryKeepsTheRing(t *testing.T, extra int, dropped string) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "one")
	bdb, err := bolt.Open(filepath.Join(root, testKey, db.FileName), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	err = bdb.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("history"))
		_, v := b.Cursor().Last()
		v = bytes.Clone(v)
		for i := range extra {
			if err := b.Put(binary.BigEndian.AppendUint64(nil, math.MaxUint64-uint64(extra-1-i)), v); err != nil {
				return err
			}
		}
		return nil
	})
	bdb.Close()
	if err != nil {
		t.Fatal(err)
	}
	found, _ := chkRun(t, s, true)
	f := chkFind(found, testKey+"/"+db.FileName, KindRecordUndecodable)
	want := fmt.Sprintf("its newest %d entries numbered again from 1, in their order, and %s (the ring", db.HistoryLimit, dropped)
	if f == nil || !f.Repaired || !strings.Contains(f.Repair, want) {
		t.Fatalf("check --repair: %+v; want %q", found, want)
	}
	if h := historyOf(t, root, testKey); len(h) != db.HistoryLimit || h[0].Seq != 1 || h[len(h)-1].Seq != db.HistoryLimit {
		t.Fatalf("history after the repair: %d entries, %+v", len(h), h[len(h)-1])
	}
	_, res := runJob(t, s, testKey, localJob(), PromoteRequest{}, "two")
	if h := historyOf(t, root, testKey); res.Gen != 2 || h[len(h)-1].Seq != db.HistoryLimit+1 {
		t.Fatalf("the promotion after the repair: %+v, newest entry %+v", res, h[len(h)-1])
	}
}

// repairKills runs whole check --repair runs of a root in a child process,
// the first to its end, each later one killed at a random moment of the
// time the first took on this machine. The race detector's second of
// sleep at exit is not part of it: with it, 19 kills of 20 landed after
// the repair. Its rounds after the first are SESSDB_CRASH_ROUNDS, 20 by
// default; the seed is logged.
type repairKills struct {
	Rounds int
	rng    *rand.Rand
	span   time.Duration
}

func newRepairKills(t *testing.T) *repairKills {
	k := &repairKills{Rounds: 20}
	if n, err := strconv.Atoi(os.Getenv("SESSDB_CRASH_ROUNDS")); err == nil && n > 0 {
		k.Rounds = n
	}
	seed := time.Now().UnixNano()
	t.Logf("seed %d, %d rounds", seed, k.Rounds)
	k.rng = rand.New(rand.NewSource(seed))
	return k
}

// run runs round r's repair of root, as of now: round 0 whole, any other
// killed.
func (k *repairKills) run(t *testing.T, r int, root string, now time.Time) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=repair-kill-at", "SESSDB_ROOT="+root, "SESSDB_POINT=none",
		"SESSDB_NOW="+strconv.FormatInt(now.UnixNano(), 10), "TMPDIR="+t.TempDir())
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if r == 0 {
		if err := cmd.Wait(); err != nil {
			t.Fatal(err)
		}
		k.span = time.Since(start)
		return
	}
	time.Sleep(time.Duration(k.rng.Int63n(int64(k.span))))
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
}
