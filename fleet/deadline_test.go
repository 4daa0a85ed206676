package fleet

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"sessdb/db"
	"sessdb/fleet/etcdmeta"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// A deadline of the caller's that passes in the middle of check's walk,
// while a key's record is read again, ends the walk with ctx's error,
// not with etcdmeta.ErrUnavailable: the read was cut short by the
// caller, not left unanswered by etcd. Before, check returned "get
// <key>: etcd unavailable: context deadline exceeded".
func TestCheckEndedByTheCallersDeadlineMidWalk(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "deadline", "mid-walk")
	f.run(key, "a")
	ctx := deadlineOnCue(t.Context())
	reached := false
	f.b.hook = func(p, k string) error {
		if p == hookCheckEntry && k == key {
			reached = true
			ctx.pass() // the deadline passes before the key's record is read again
		}
		return nil
	}
	_, err := f.b.Check(ctx, CheckOptions{}, func(store.Finding) error { return nil })
	if !reached {
		t.Fatalf("check = %v before the key's entry", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, etcdmeta.ErrUnavailable) {
		t.Fatalf("check = %v; want the caller's deadline, not etcd unavailable", err)
	}
}

// cueCtx is a caller's context whose deadline passes when the test calls
// pass: at a point a hook names, where a real deadline of a few
// milliseconds passed wherever a loaded machine had got to by then (a
// check under -race beside other test runs had not listed its keys
// within 50 ms, and never reached the point under test).
type cueCtx struct {
	context.Context
	done chan struct{}
	once sync.Once
}

func deadlineOnCue(parent context.Context) *cueCtx {
	return &cueCtx{Context: parent, done: make(chan struct{})}
}

func (c *cueCtx) pass()                 { c.once.Do(func() { close(c.done) }) }
func (c *cueCtx) Done() <-chan struct{} { return c.done }

func (c *cueCtx) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// check --repair whose caller's deadline passes (or whose caller cancels)
// before an orphan's key is locked leaves the orphan, and its repair note
// says the check was stopped, not that etcd did not answer: the operator
// reading "etcd unavailable" would look for an outage that never was.
func TestRepairStoppedByTheCallerSaysSo(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	f.marked() // a fleet's orphans are in a dir it marked before it wrote them
	key := store.Key("github", "deadline", "repair")
	orphan := filepath.Join(f.dir, key, "0000000000000001-0123456789abcdef.jsonl")
	if err := os.MkdirAll(filepath.Dir(orphan), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(orphan, []byte(testHeader), 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(orphan, old, old); err != nil {
		t.Fatal(err)
	}
	connected(t, f.b)
	for _, deadline := range []bool{true, false} {
		var ctx context.Context
		ctx, cancel := context.WithCancel(t.Context())
		stop := cancel
		if deadline {
			cue := deadlineOnCue(t.Context())
			ctx, stop = cue, cue.pass // the deadline passes
		}
		f.b.hook = func(p, k string) error {
			if p == hookRepair && k == key {
				stop()
			}
			return nil
		}
		var notes []string
		_, err := f.b.Check(ctx, CheckOptions{Repair: true}, func(fd store.Finding) error {
			if fd.Kind == KindOrphan {
				notes = append(notes, fd.Repair)
			}
			return nil
		})
		want := ctx.Err()
		cancel()
		f.b.hook = nil
		if !errors.Is(err, want) || errors.Is(err, etcdmeta.ErrUnavailable) {
			t.Errorf("deadline %v: check --repair = %v; want the caller's %v", deadline, err, want)
		}
		if len(notes) != 1 || strings.Contains(notes[0], "unavailable") || !strings.Contains(notes[0], "interrupted") {
			t.Errorf("deadline %v: check --repair = %v, the orphan's notes %q; want one saying the check was interrupted", deadline, err, notes)
		}
		if _, err := os.Stat(orphan); err != nil {
			t.Fatalf("deadline %v: the orphan was removed: %v", deadline, err)
		}
	}
}

// A key whose history's newest entry sits in the last slot an entry takes
// (2^64-2: a history brought in from a key dir begun at a generation that
// high) takes no promotion or refusal: etcdmeta refuses each, ErrDamaged,
// naming the entry and what settles it. check reports it (the history
// entry record-undecodable), so the operator learns of it before the
// workers' promote-failed pile up. It said nothing: the key read fine.
// check --repair numbers the history again (TestARepairRenumbersAFleetHistoryInItsLastSlot).
func TestAHistoryInItsLastSlotIsReported(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "last", "slot")
	sc := db.Sidecars{PiVersion: new(string)}
	if _, err := f.b.meta.Create(t.Context(), key, recordOf(sc, ""), []etcdmeta.HistoryEntry{{Seq: math.MaxUint64 - 1, Gen: 1, Outcome: "superseded"}}); err != nil {
		t.Fatal(err)
	}
	var found []store.Finding
	if _, err := f.b.Check(t.Context(), CheckOptions{}, func(fd store.Finding) error { found = append(found, fd); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(found) != 1 || found[0].Kind != store.KindRecordUndecodable || !strings.HasSuffix(found[0].Path, "/fffffffffffffffe") || !strings.Contains(found[0].Detail, "no entry can follow it") {
		t.Fatalf("check: %+v; want the history entry in the last slot reported", found)
	}
	found = nil
	if _, err := f.b.Check(t.Context(), CheckOptions{Repair: true}, func(fd store.Finding) error { found = append(found, fd); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(found) != 1 || !found[0].Repaired || !strings.Contains(found[0].Repair, "numbered again in place") {
		t.Fatalf("check --repair: %+v; want the history numbered again", found)
	}
	if res := f.run(key, "after"); res.Gen != 2 {
		t.Fatalf("the promotion after the repair: %+v, want gen 2 (above the history's gen 1)", res)
	}
}
