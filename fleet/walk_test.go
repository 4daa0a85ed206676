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

	"sessdb/fleet/etcdmeta"
	"sessdb/fleet/shared"
	"sessdb/gates"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// checkFindings runs Check and returns its findings by path.
func checkFindings(t *testing.T, b *Backend, o CheckOptions) (map[string]store.Finding, store.CheckSummary) {
	t.Helper()
	found := map[string]store.Finding{}
	sum, err := b.Check(context.Background(), o, func(f store.Finding) error {
		found[f.Path] = f
		return nil
	})
	if err != nil {
		t.Fatalf("check: %v", err)
	}
	return found, sum
}

// A repair judges each orphan again under the key's lock, from a fresh
// read of its record: a promotion that landed after the snapshot keeps
// the generation it superseded through the grace period; a key whose lock
// another holder keeps is left alone, and says so.
func TestRepairJudgesAgainUnderTheLock(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "repair", "x")
	f.run(key, "one")
	f.run(key, "two")
	// first is a generation above the record's, three hours old (a
	// promotion that died before its commit): judged by the record's
	// date, as a generation the record's history says was superseded
	// is not (a promotion since does not make it needed again).
	first := key + "/0000000000000003-0123456789abcdef.jsonl"
	if err := os.WriteFile(filepath.Join(f.dir, first), []byte(testHeader), 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-3 * time.Hour)
	os.Chtimes(filepath.Join(f.dir, first), old, old)
	// The second promotion landed two hours ago by the checker's clock.
	now := func() time.Time { return time.Now().Add(2 * time.Hour) }
	o := CheckOptions{Repair: true, Now: now}

	// Another holder keeps the key's lock for the whole wait.
	other := f.open(func(cfg *Config) { cfg.LockWait = 200 * time.Millisecond })
	unlock, _, err := f.b.meta.Lock(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	found, _ := checkFindings(t, other, o)
	unlock()
	if g := found[first]; g.Kind != KindOrphan || g.Repaired || !g.Remains || !strings.Contains(g.Repair, "lock is held") {
		t.Fatalf("an orphan of a locked key: %+v", g)
	}
	if _, err := os.Stat(filepath.Join(f.dir, first)); err != nil {
		t.Fatalf("the orphan of a locked key went: %v", err)
	}

	// A promotion lands between the snapshot and the lock.
	f.b.hook = func(point, k string) error {
		if point == hookRepair && k == key {
			f.b.hook = nil
			f.now = now() // it lands as the checker's clock reads
			f.run(key, "three")
		}
		return nil
	}
	found, _ = checkFindings(t, f.b, o)
	if g := found[first]; g.Repaired || !g.Remains || !strings.Contains(g.Repair, "needs it now") {
		t.Fatalf("an orphan made young again by a promotion: %+v", g)
	}
	if _, err := os.Stat(filepath.Join(f.dir, first)); err != nil {
		t.Fatalf("a generation a fresh record keeps went: %v", err)
	}

	// Once that promotion is past the grace period too, both go.
	later := func() time.Time { return time.Now().Add(4 * time.Hour) }
	found, sum := checkFindings(t, f.b, CheckOptions{Repair: true, Now: later})
	if sum.Repaired != 2 || !found[first].Repaired || found[first].Remains {
		t.Fatalf("the second repair: %+v, %+v", sum, found)
	}
	if left := f.files(key); len(left) != 1 || left[0] != f.recordFile(key) {
		t.Fatalf("left %v, want the record's own file", left)
	}
	f.holds(key, "three", 3)
}

// Inspect reports a record as dump shows it, judged as a resolve judges
// it: a damaged record is meta-unreadable, with its error and no file.
func TestInspectJudgesAsResolve(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	good, damaged := store.Key("github", "inspect", "good"), store.Key("github", "inspect", "damaged")
	f.run(good, "one")
	cli := c.Client(t)
	if _, err := cli.Put(context.Background(), f.b.meta.RecordKey(damaged), "not msgpack"); err != nil {
		t.Fatal(err)
	}
	var got []Report
	err := f.b.Inspect(context.Background(), InspectOptions{Bounds: gates.Bounds{TTL: time.Hour}, History: 64, Verify: true}, func(r Report) error {
		got = append(got, r)
		return nil
	})
	if err != nil || len(got) != 2 {
		t.Fatalf("inspect: %v, %d reports", err, len(got))
	}
	byKey := map[string]Report{got[0].Name: got[0], got[1].Name: got[1]}
	g := byKey[good]
	if g.Verdict == nil || g.Verdict.IfMatched != string(gates.Resumed) || g.File != f.recordFile(good) || g.Verify.Result != store.VerifyOK || len(g.History) != 1 || g.Layout != LayoutEtcd {
		t.Fatalf("the good key: %+v", g)
	}
	d := byKey[damaged]
	if d.Verdict == nil || d.Verdict.Reason != string(gates.MetaUnreadable) || d.MetaError == "" || d.File != "" {
		t.Fatalf("the damaged record: %+v", d)
	}
	sess, err := f.s.Resolve(damaged, testJob, t.TempDir())
	if err != nil || sess.Reason != gates.MetaUnreadable {
		t.Fatalf("resolve of the damaged record: %+v, %v", sess, err)
	}
}

// Unreachable answers as an opened Backend answers when etcd fails it:
// store-unavailable for an etcd that is silent, with the cause in the
// log (the verdict carries none), a fault for refused credentials, the
// cause for every promotion; with the fleet's ID. A Config that Open
// refuses, it refuses too.
func TestUnreachable(t *testing.T) {
	dir := t.TempDir()
	var log bytes.Buffer
	cfg := Config{Config: etcdmeta.Config{Endpoints: []string{"http://127.0.0.1:1"}, Prefix: "/p/"}, TranscriptsDir: dir, Logger: zerolog.New(&log)}
	opened, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer opened.Close()
	want, _ := opened.ID()
	key := store.Key("github", "unreachable", "x")
	for _, cause := range []error{etcdmeta.ErrUnavailable, etcdmeta.ErrAuth} {
		u, err := Unreachable(cfg, cause)
		if err != nil {
			t.Fatal(err)
		}
		if id, _ := u.ID(); id != want {
			t.Errorf("ID = %q, want the fleet's %q", id, want)
		}
		if same, _ := u.SameID(want); !same {
			t.Error("SameID of the fleet's own ID is false")
		}
		s := store.NewOn(u, store.Options{})
		jobDir := t.TempDir()
		sess, err := s.Resolve(key, testJob, jobDir)
		switch {
		case cause == etcdmeta.ErrUnavailable && (err != nil || sess.Reason != gates.StoreUnavailable):
			t.Errorf("resolve = %+v, %v; want store-unavailable", sess, err)
		case cause == etcdmeta.ErrUnavailable && (!strings.Contains(log.String(), "session_store_unavailable") || !strings.Contains(log.String(), cause.Error()) || !strings.Contains(log.String(), key)):
			t.Errorf("a store-unavailable resolve logged %q; want the key and its cause", log.String())
		case cause == etcdmeta.ErrAuth && !errors.Is(err, etcdmeta.ErrAuth):
			t.Errorf("resolve = %+v, %v; want the refusal, a fault", sess, err)
		}
		if cause == etcdmeta.ErrUnavailable {
			appendMarker(t, jobDir, "x")
			res, err := s.Promote(sess, store.PromoteRequest{})
			if !errors.Is(err, cause) || res.Promoted {
				t.Errorf("promote = %+v, %v; want the cause", res, err)
			}
		}
	}
	if _, err := Unreachable(cfg, errors.New("other")); err == nil {
		t.Error("Unreachable took a cause no Backend answers with")
	}
	if _, err := Unreachable(Config{TranscriptsDir: dir}, etcdmeta.ErrUnavailable); !errors.Is(err, etcdmeta.ErrInvalidConfig) {
		t.Errorf("a Config with no endpoints: %v, want ErrInvalidConfig as Open gives", err)
	}
	if _, err := Unreachable(Config{Config: cfg.Config, TranscriptsDir: filepath.Join(dir, "missing")}, etcdmeta.ErrUnavailable); !errors.Is(err, ErrNoTranscriptsDir) {
		t.Errorf("a missing transcripts dir: %v", err)
	}
}

// IsUnreachable is the set of causes Unreachable takes, and no more: the
// CLI answers on Unreachable's backend for exactly what it reports, so a
// cause it names that Unreachable refused would be a fault (exit 1)
// instead of store-unavailable or promote-failed, and one it missed would
// be a fault too.
func TestIsUnreachableIsWhatUnreachableTakes(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{Config: etcdmeta.Config{Endpoints: []string{"http://127.0.0.1:1"}, Prefix: "/p/"}, TranscriptsDir: dir}
	for _, c := range []struct {
		cause error
		want  bool
	}{
		{etcdmeta.ErrUnavailable, true},
		{fmt.Errorf("etcd login: %w", etcdmeta.ErrAuth), true},
		{&os.PathError{Op: "stat", Path: dir, Err: shared.ErrDirUnavailable}, true},
		{ErrOtherFleet, false},
		{etcdmeta.ErrInvalidConfig, false},
		{shared.ErrBadMark, false},
		{errors.New("other"), false},
		{nil, false},
	} {
		_, err := Unreachable(cfg, c.cause)
		if got := IsUnreachable(c.cause); got != c.want || (err == nil) != c.want {
			t.Errorf("%v: IsUnreachable = %v, Unreachable's error %v; want both to take it: %v", c.cause, got, err, c.want)
		}
	}
}

// A history entry that does not decode is a problem check reports: a
// resolve, which reads only the record, resumes the key as if nothing
// were wrong, while every promotion that must read the history fails. A
// repair then judges the key's orphans by its record alone, as reap's
// sweep does (stillOrphans), and removes one past the grace from the
// record's date (found by an audit: check reported nothing, and the
// repair said the record needed the orphan; then the repair left every
// orphan of such a key, "does not decode", while reap removed them).
func TestCheckFindsADamagedHistoryEntry(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "history", "damaged")
	f.run(key, "one")
	first := f.recordFile(key)
	f.run(key, "two")
	old := time.Now().Add(-3 * time.Hour)
	os.Chtimes(filepath.Join(f.dir, first), old, old)
	if _, err := c.Client(t).Put(t.Context(), f.prefix+"/history/"+key+"/zzzz", "x"); err != nil {
		t.Fatal(err)
	}
	f.holds(key, "two", 2)
	found, sum := checkFindings(t, f.b, CheckOptions{Repair: true, Now: func() time.Time { return time.Now().Add(2 * time.Hour) }})
	g, ok := found[f.prefix+"/history/"+key+"/"]
	if !ok || g.Kind != store.KindRecordUndecodable || g.Severity != store.SeverityProblem || !strings.Contains(g.Repair, "etcdctl del") {
		t.Fatalf("the damaged history: %+v (found %v), want a problem, record-undecodable", g, ok)
	}
	if sum.Problems != 1 {
		t.Fatalf("summary %+v, want 1 problem", sum)
	}
	if o := found[first]; o.Kind != KindOrphan || !o.Repaired || o.Repair != "removed" {
		t.Fatalf("the key's orphan: %+v, want it removed, judged by the record's date as reap judges it", o)
	}
}

// Which promotions a damaged history entry fails (docs/fleet.md, check):
// each process's first write guesses its history slot from the record's
// hint, so a promotion whose base is in place and whose slot is free
// reads no history and promotes; once a refusal was recorded after the
// key's last promotion, the slot the hint names is taken, the retry reads
// the history, and every promotion fails until the entry is removed. A
// fresh Backend stands for each CLI process.
func TestADamagedHistoryEntryFailsPromotionsAfterARefusal(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	fresh := func() *store.Store {
		return store.NewOn(f.open(), store.Options{Now: f.clock, Bounds: gates.Bounds{TTL: 14 * 24 * time.Hour}})
	}
	damage := func(key string) {
		t.Helper()
		if _, err := c.Client(t).Put(t.Context(), f.prefix+"/history/"+key+"/0000000000000001", "x"); err != nil {
			t.Fatal(err)
		}
	}
	promote := func(s *store.Store, key, marker string) (store.PromoteResult, error) {
		sess, jobDir := resolveOn(t, s, key)
		if !sess.Resume {
			t.Fatalf("%s: the key resolves %s, want it resumed despite the damaged entry", marker, sess.Reason)
		}
		appendMarker(t, jobDir, marker)
		return s.Promote(sess, store.PromoteRequest{PiVersion: testJob.PiVersion})
	}

	quiet := store.Key("github", "history", "no-refusal")
	f.run(quiet, "one")
	damage(quiet)
	if res, err := promote(fresh(), quiet, "two"); err != nil || !res.Promoted {
		t.Fatalf("no refusal since the last promotion: %+v, %v; want promoted without reading the history", res, err)
	}

	refused := store.Key("github", "history", "refusal")
	f.run(refused, "one")
	stale, _ := f.job(refused, "stale")
	f.run(refused, "two")
	if res, err := f.promote(stale); err != nil || res.Reason != gates.Superseded {
		t.Fatalf("the stale job: %+v, %v; want superseded, recorded", res, err)
	}
	damage(refused)
	if res, err := promote(fresh(), refused, "three"); err == nil || res.Reason != gates.PromoteFailed {
		t.Fatalf("a refusal recorded since the last promotion: %+v, %v; want promote-failed", res, err)
	}
}
