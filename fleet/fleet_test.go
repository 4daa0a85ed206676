package fleet

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"sessdb/fleet/etcdmeta"
	"sessdb/fleet/shared"
	"sessdb/gates"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

func TestOpenNeedsATranscriptsDir(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o600)
	eps := []string{"http://127.0.0.1:1"}
	for name, d := range map[string]string{"empty": "", "missing": filepath.Join(dir, "missing"), "a file": file} {
		if _, err := Open(Config{Config: etcdmeta.Config{Endpoints: eps}, TranscriptsDir: d}); !errors.Is(err, ErrNoTranscriptsDir) {
			t.Errorf("%s transcripts dir: %v, want ErrNoTranscriptsDir", name, err)
		}
	}
	if _, err := Open(Config{TranscriptsDir: dir}); !errors.Is(err, etcdmeta.ErrInvalidConfig) {
		t.Errorf("no endpoints: %v, want ErrInvalidConfig", err)
	}
}

// The ID names the transcripts dir and the prefix; a ticket from either
// another dir or another prefix is another fleet's.
// Unreachable with no cause is an error that says so. Before, its
// message was "fleet unreachable: %!w(<nil>)", fmt's own complaint.
func TestUnreachableWithNoCauseSaysSo(t *testing.T) {
	cfg := Config{Config: etcdmeta.Config{Endpoints: []string{"http://127.0.0.1:1"}}, TranscriptsDir: t.TempDir()}
	b, err := Unreachable(cfg, nil)
	if b != nil || err == nil || strings.Contains(err.Error(), "%!") || !strings.Contains(err.Error(), "no cause") {
		t.Fatalf("Unreachable(cfg, nil) = %v, %v; want no backend and an error that says no cause was given", b, err)
	}
}

func TestIDNamesTheDirAndThePrefix(t *testing.T) {
	dir := t.TempDir()
	open := func(d, prefix string) *Backend {
		b, err := Open(Config{Config: etcdmeta.Config{Endpoints: []string{"http://127.0.0.1:1"}, Prefix: prefix}, TranscriptsDir: d})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	}
	b := open(dir, "/fleet/")
	id, _ := b.ID()
	if want := dir + " (etcd prefix /fleet)"; id != want {
		t.Fatalf("ID = %q, want %q", id, want)
	}
	link := filepath.Join(t.TempDir(), "link")
	os.Symlink(dir, link)
	other := t.TempDir()
	for name, c := range map[string]struct {
		id   string
		same bool
	}{
		"itself":                     {id, true},
		"a link to the dir":          {link + " (etcd prefix /fleet)", true},
		"another prefix":             {dir + " (etcd prefix /fleet2)", false},
		"another dir":                {other + " (etcd prefix /fleet)", false},
		"a dir that does not exist":  {dir + "/x (etcd prefix /fleet)", false},
		"a key-dir store's root":     {dir, false},
		"the prefix without its end": {dir + " (etcd prefix /fleet", false},
	} {
		if got, err := b.SameID(c.id); err != nil || got != c.same {
			t.Errorf("%s: SameID(%q) = %v, %v; want %v", name, c.id, got, err, c.same)
		}
	}
	if got, _ := open(link, "/fleet").SameID(id); !got {
		t.Error("a fleet opened through a link does not know its own data")
	}
}

// Two fleets never share an ID: a prefix holding the ID's own separator
// is refused, or a fleet whose dir ends in " (etcd prefix /a" and whose
// prefix is "/b" had the ID of the fleet with the dir without that end
// and the prefix "/a (etcd prefix /b", and each took the other's tickets
// for its own.
func TestTwoFleetsNeverShareAnID(t *testing.T) {
	base := t.TempDir()
	dirA, dirB := filepath.Join(base, "t (etcd prefix /a"), filepath.Join(base, "t")
	os.MkdirAll(dirA, 0o700)
	os.Mkdir(dirB, 0o700)
	open := func(dir, prefix string) (*Backend, error) {
		return Open(Config{Config: etcdmeta.Config{Endpoints: []string{"http://127.0.0.1:1"}, Prefix: prefix}, TranscriptsDir: dir})
	}
	a, err := open(dirA, "/b")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	idA, _ := a.ID()
	b, err := open(dirB, "/a (etcd prefix /b")
	if err == nil {
		defer b.Close()
		same, _ := b.SameID(idA)
		t.Fatalf("the prefix %q was taken; SameID of the other fleet's ID %q = %v", "/a (etcd prefix /b", idA, same)
	}
	if !errors.Is(err, etcdmeta.ErrInvalidConfig) || !strings.Contains(err.Error(), "Prefix") {
		t.Fatalf("open: %v, want an invalid Prefix", err)
	}
	cfg := Config{Config: etcdmeta.Config{Endpoints: []string{"http://127.0.0.1:1"}, Prefix: "/a (etcd prefix /b"}, TranscriptsDir: dirB}
	if _, err := Unreachable(cfg, etcdmeta.ErrUnavailable); !errors.Is(err, etcdmeta.ErrInvalidConfig) {
		t.Fatalf("Unreachable: %v, want an invalid Prefix", err)
	}
}

// With etcd down, a resolve is store-unavailable (a verdict, no error)
// and a promote is promote-failed with its cause, writing nothing; a
// commit whose answer never came leaves its file for reap, and the retry
// promotes once etcd is back.
func TestEtcdDownIsANamedColdStartAndPromoteFailed(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	const timeout = time.Second
	f := newFixture(t, c, func(c *Config) { c.RequestTimeout = timeout })
	key := store.Key("github", "down", "x")
	f.run(key, "one")
	early, earlyDir := f.job(key, "two")
	c.Stop(0)

	start := time.Now()
	sess, jobDir := resolveOn(t, f.s, key)
	if sess.Resume || sess.Reason != gates.StoreUnavailable || sess.Base != (store.Base{}) || len(stagedOf(t, jobDir)) != 0 {
		t.Fatalf("resolve with etcd down = %+v, want store-unavailable with no base and nothing staged", sess)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("the resolve took %v with a request timeout of 1s", d)
	}
	start = time.Now()
	res, err := f.promote(early)
	if res.Promoted || res.Reason != gates.PromoteFailed || !errors.Is(err, etcdmeta.ErrUnavailable) {
		t.Fatalf("promote with etcd down = %+v, %v", res, err)
	}
	// One request timeout, not one for Begin's look at the record and
	// another for the read after it (found by an audit: twice the
	// timeout). Each wait lasts its timeout at least, so twice it is
	// the bug's floor, and all it leaves a loaded machine (measured:
	// 1.01 s) is the time up to it.
	if d := time.Since(start); d >= 2*timeout {
		t.Fatalf("the promote took %v with a request timeout of %v: one wait for each read", d, timeout)
	}
	if got := markers(stagedOf(t, earlyDir)); got[len(got)-1] != "two" {
		t.Fatal("the job's transcript left its job dir")
	}
	c.Restart(0)
	f.waitUp()
	if n := len(f.files(key)); n != 1 {
		t.Fatalf("%d files after a promote that could not read the key, want 1", n)
	}
	f.holds(key, "one", 1)

	// etcd goes away between the file and the commit.
	f.b.hook = func(p, _ string) error {
		if p == hookCommit {
			c.Stop(0)
		}
		return nil
	}
	res, err = f.promote(early)
	f.b.hook = nil
	if res.Promoted || res.Reason != gates.PromoteFailed || !errors.Is(err, etcdmeta.ErrUnavailable) {
		t.Fatalf("promote losing etcd before its commit = %+v, %v", res, err)
	}
	c.Restart(0)
	f.waitUp()
	if n := len(f.files(key)); n != 2 {
		t.Fatalf("%d files: the file of a commit whose answer never came must stay for reap", n)
	}
	f.holds(key, "one", 1)
	if res, err := f.promote(early); err != nil || !res.Promoted || res.Repeat || res.Gen != 2 {
		t.Fatalf("the retry with etcd back = %+v, %v", res, err)
	}
	f.holds(key, "two", 2)
	kept := f.recordFile(key)
	r, err := f.b.Reap(t.Context(), ReapOptions{Grace: time.Minute, Now: func() time.Time { return time.Now().Add(2 * time.Minute) }})
	if err != nil || len(r.Swept) != 2 || slices.Contains(r.Swept, kept) {
		t.Fatalf("reap = %+v, %v; want the orphan and gen 1 swept, never %s", r, err, kept)
	}
	if got := f.files(key); len(got) != 1 || got[0] != kept {
		t.Fatalf("files after reap: %v, want only %s", got, kept)
	}
	f.holds(key, "two", 2)
}

// A generation gone before the open, or under the copy, is a named cold
// start (transcript-replaced), never a torn copy; the job promotes onto
// the record and the key goes on. Removed under a copy on a local disk, it
// is still read whole.
func TestVanishedGenerationIsTranscriptReplaced(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	key := store.Key("github", "vanish", "x")
	f.run(key, "one")
	remove := func(p string) func(string, string) error {
		return func(q, _ string) error {
			if q == p {
				os.Remove(filepath.Join(f.dir, f.recordFile(key)))
			}
			return nil
		}
	}

	f.b.hook = remove(hookOpen)
	sess, jobDir := resolveOn(t, f.s, key)
	f.b.hook = nil
	if sess.Resume || sess.Reason != gates.TranscriptReplaced || sess.Base.Gen != 1 || len(stagedOf(t, jobDir)) != 0 {
		t.Fatalf("a generation gone before the open: %+v", sess)
	}
	appendMarker(t, jobDir, "two")
	if res, err := f.promote(sess); err != nil || !res.Promoted || res.Gen != 2 {
		t.Fatalf("the job's promotion onto the record: %+v, %v", res, err)
	}
	f.holds(key, "two", 2)

	// Under the copy: on NFS every read of a file another host removed
	// fails (ESTALE); the hook removes it and closes it to make the reads
	// fail.
	f.b.hook = func(p, _ string) error {
		if p == hookSource {
			os.Remove(filepath.Join(f.dir, f.recordFile(key)))
			return errors.New("stale")
		}
		return nil
	}
	sess, jobDir = resolveOn(t, f.s, key)
	f.b.hook = nil
	if sess.Resume || sess.Reason != gates.TranscriptReplaced || sess.Base.Gen != 2 || len(stagedOf(t, jobDir)) != 0 {
		t.Fatalf("a generation whose reads fail under the copy: %+v", sess)
	}

	appendMarker(t, jobDir, "three")
	if res, err := f.promote(sess); err != nil || !res.Promoted || res.Gen != 3 {
		t.Fatalf("the job's promotion onto the record: %+v, %v", res, err)
	}

	f.b.hook = remove(hookSource)
	sess, jobDir = resolveOn(t, f.s, key)
	f.b.hook = nil
	if got := markers(stagedOf(t, jobDir)); !sess.Resume || sess.Gen() != 3 || got[len(got)-1] != "three" {
		t.Fatalf("removed after the open on a local disk: %+v, %v", sess, got)
	}
}

// A promotion that loses etcd's compare removes its own file, and the
// store decides again: superseded (and logs no orphan left: the warning
// is for a file it could not remove).
func TestLostCompareRemovesItsFile(t *testing.T) {
	etcdtest.Beside(t)
	testLostCompare(t, etcdtest.Start1(t), false)
}

// A loser whose first try etcd did not take (unavailable: the commit is
// unsure) meets the winner's record on its retry: no try of its own
// landed (the record names another file, the history holds no entry of
// its), so it is superseded all the same, and its file is left for reap,
// as after any lost answer. In process: the unsure commit is FailNext's,
// an interceptor fault.
func TestAnUnsureCommitThatLostItsCompareIsSuperseded(t *testing.T) {
	etcdtest.Beside(t)
	testLostCompare(t, etcdtest.Start(t, etcdtest.Options{Members: 1, InProcess: true}), true)
}

func testLostCompare(t *testing.T, c *etcdtest.Cluster, unsure bool) {
	var log bytes.Buffer
	f := newFixture(t, c, func(cfg *Config) { cfg.Logger = zerolog.New(&log) })
	key := store.Key("github", "race", "x")
	f.run(key, "base")
	winner, _ := f.job(key, "winner")
	loser, _ := f.job(key, "loser")
	other := store.NewOn(f.open(), store.Options{})
	const txnMethod = "/etcdserverpb.KV/Txn" // a commit is one
	f.b.hook = func(p, _ string) error {
		if p == hookCommit {
			f.b.hook = nil
			if res, err := other.Promote(winner, store.PromoteRequest{PiVersion: "0.58.3"}); err != nil || !res.Promoted {
				t.Errorf("the winner: %+v, %v", res, err)
			}
			if unsure {
				f.c.FailNext(txnMethod, 0, 1)
			}
		}
		return nil
	}
	if unsure {
		defer f.c.FailNext(txnMethod, 0, 0)
	}
	res, err := f.promote(loser)
	if err != nil || res.Promoted || res.Reason != gates.Superseded || res.SupersededBy != 2 {
		t.Fatalf("the loser (unsure %v) = %+v, %v; want superseded by gen 2", unsure, res, err)
	}
	f.holds(key, "winner", 2)
	got := f.files(key)
	if unsure {
		if len(got) != 3 {
			t.Fatalf("files %v: want gens 1 and 2 and the unsure loser's, left for reap", got)
		}
		return
	}
	if len(got) != 2 || !slices.Contains(got, f.recordFile(key)) {
		t.Fatalf("files %v: want gen 1 and the winner's, the loser's removed", got)
	}
	if strings.Contains(log.String(), "session_orphan_left") {
		t.Fatalf("the loser's file was removed, and the log says it was left: %s", log.String())
	}
}

// A key reap could not handle is in Skipped and not in Kept, as a
// sessions root's reap counts it (store.ReapResult: every name in exactly
// one of them), so that sessdb reap's summary says failed, not kept and
// failed. Before, it was counted in both.
func TestReapCountsAFailedKeyOnce(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	old, fresh := store.Key("github", "reap-once", "old"), store.Key("github", "reap-once", "fresh")
	f.now = time.Now().Add(-30 * 24 * time.Hour)
	f.run(old, "old")
	f.now = time.Time{}
	f.run(fresh, "fresh")
	f.b.hook = func(p, k string) error {
		if p == hookReapDelete && k == old {
			return errors.New("injected")
		}
		return nil
	}
	r, err := f.b.Reap(t.Context(), ReapOptions{TTL: 14 * 24 * time.Hour})
	if err != nil || len(r.Removed) != 0 || r.Skipped[old] == nil || len(r.Skipped) != 1 || r.Kept != 1 {
		t.Fatalf("reap = %+v, %v; want %s skipped (failed) and only %s kept", r, err, old, fresh)
	}
}

// A record that does not decode is a key reap cannot judge: with a TTL it
// is in Skipped (sessdb reap: failed, exit 1), not in Kept, as a sessions
// root's reap counts a key whose meta.db is damaged (store.ReapWith); with
// none, no key is judged, and it is kept, as the root's is. Before, it was
// counted kept either way.
func TestReapCountsAnUndecodableRecordAsFailed(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	fresh, damaged := store.Key("github", "reap-undecodable", "fresh"), store.Key("github", "reap-undecodable", "damaged")
	f.run(fresh, "fresh")
	f.run(damaged, "damaged")
	if _, err := c.Client(t).Put(t.Context(), f.prefix+"/record/"+damaged, "\xc1"); err != nil {
		t.Fatal(err)
	}
	for _, dry := range []bool{true, false} {
		r, err := f.b.Reap(t.Context(), ReapOptions{TTL: 14 * 24 * time.Hour, DryRun: dry})
		if err != nil || len(r.Removed) != 0 || len(r.Skipped) != 1 || !errors.Is(r.Skipped[damaged], etcdmeta.ErrDamaged) || r.Kept != 1 {
			t.Errorf("dry run %v: reap = %+v, %v; want %s skipped (failed, ErrDamaged) and only %s kept", dry, r, err, damaged, fresh)
		}
	}
	r, err := f.b.Reap(t.Context(), ReapOptions{})
	if err != nil || len(r.Skipped) != 0 || r.Kept != 2 {
		t.Errorf("without a TTL: reap = %+v, %v; want both kept", r, err)
	}
	if got := f.files(damaged); len(got) != 1 {
		t.Errorf("the damaged key's files: %v; want its one file kept", got)
	}
}

// Reap removes an expired key and its file, keeps a key promoted under it,
// and sweeps files no record needs once their grace period has passed;
// never a record's own file, nor anything of a key whose record is
// damaged.
func TestReap(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	const ttl = 14 * 24 * time.Hour
	old, fresh, damaged, raced := store.Key("github", "reap", "old"), store.Key("github", "reap", "fresh"), store.Key("github", "reap", "damaged"), store.Key("github", "reap", "raced")
	f.now = time.Now().Add(-30 * 24 * time.Hour)
	f.run(old, "old")
	f.run(raced, "raced")
	f.now = time.Time{}
	for _, m := range []string{"a", "b", "c"} {
		f.run(fresh, m)
	}
	f.run(damaged, "d")
	if _, err := c.Client(t).Put(t.Context(), f.prefix+"/record/"+damaged, "\xc1"); err != nil {
		t.Fatal(err)
	}
	orphan, _, _, err := shared.Write(t.Context(), f.dir, fresh, 9, strings.NewReader(testHeader))
	if err != nil {
		t.Fatal(err)
	}
	freshFile, oldFiles := f.recordFile(fresh), f.files(old)

	// The raced key is promoted between the reaper's judgement and its
	// delete: the delete loses its compare.
	f.b.hook = func(p, k string) error {
		if p == hookReapDelete && k == raced {
			f.b.hook = nil
			store.NewOn(f.open(), store.Options{}).Promote(mustJob(f, raced, "late"), store.PromoteRequest{PiVersion: "0.58.3"})
		}
		return nil
	}
	dry, err := f.b.Reap(t.Context(), ReapOptions{TTL: ttl, DryRun: true})
	if err != nil || !slices.Equal(dry.Removed, sortedPair(old, raced)) || len(dry.Swept) != 0 || len(f.files(old)) != 1 {
		t.Fatalf("dry run = %+v, %v", dry, err)
	}
	r, err := f.b.Reap(t.Context(), ReapOptions{TTL: ttl})
	// The damaged record is one reap could not judge: failed, not kept
	// (TestReapCountsAnUndecodableRecordAsFailed).
	if err != nil || !slices.Equal(r.Removed, []string{old}) || len(r.Swept) != 0 || r.Kept != 2 || len(r.Skipped) != 1 || r.Skipped[damaged] == nil {
		t.Fatalf("reap = %+v, %v; want %s removed, %s failed, nothing swept in its grace period", r, err, old, damaged)
	}
	if sess, _ := resolveOn(t, f.s, old); sess.Reason != gates.Absent || len(f.files(old)) != 0 {
		t.Fatalf("the reaped key: %s, files %v (were %v)", sess.Reason, f.files(old), oldFiles)
	}
	f.holds(raced, "late", 2)

	later := func() time.Time { return time.Now().Add(2 * time.Hour) }
	r, err = f.b.Reap(t.Context(), ReapOptions{Now: later})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range r.Swept {
		if name == freshFile || strings.HasPrefix(name, damaged) || name == f.recordFile(raced) {
			t.Fatalf("swept %s, which a record needs", name)
		}
	}
	if !slices.Contains(r.Swept, orphan) || !slices.Contains(r.Swept, old+"/") || len(r.Swept) != 5 { // the orphan, fresh's a and b, raced's first, old's dir
		t.Fatalf("swept %v, want the orphan, the three superseded generations and the reaped key's empty dir", r.Swept)
	}
	f.holds(fresh, "c", 3)
	if len(f.files(damaged)) != 1 {
		t.Fatal("a damaged record's file was removed")
	}
}

func sortedPair(a, b string) []string {
	if a > b {
		a, b = b, a
	}
	return []string{a, b}
}

func mustJob(f *fixture, key, marker string) store.Session {
	sess, _ := f.job(key, marker)
	return sess
}

// A promotion's file is written before the commit that names it, so no
// grace period, however short, lets reap or check --repair sweep it in
// between: a file of a generation above its record's is kept through the
// in-flight window whatever the grace (found by an audit: a grace of 10 ms
// swept an acknowledged generation). A negative grace is the default.
func TestShortGraceNeverSweepsAPromotionInFlight(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	for _, sweep := range []struct {
		name string
		// run sweeps and returns what it removed.
		run func(b *Backend) ([]string, error)
	}{
		{"reap", func(b *Backend) ([]string, error) {
			r, err := b.Reap(t.Context(), ReapOptions{Grace: 10 * time.Millisecond})
			return r.Swept, err
		}},
		{"reap with a negative grace", func(b *Backend) ([]string, error) {
			r, err := b.Reap(t.Context(), ReapOptions{Grace: -time.Hour})
			return r.Swept, err
		}},
		{"check --repair", func(b *Backend) ([]string, error) {
			var removed []string
			_, err := b.Check(t.Context(), CheckOptions{Repair: true, Grace: 10 * time.Millisecond}, func(fd store.Finding) error {
				if fd.Repaired {
					removed = append(removed, fd.Path)
				}
				return nil
			})
			return removed, err
		}},
	} {
		t.Run(sweep.name, func(t *testing.T) {
			key := store.Key("github", "in-flight", sweep.name)
			f.run(key, "a")
			sess, _ := f.job(key, "b")
			var swept []string // this key's files the sweep removed
			f.b.hook = func(p, _ string) error {
				if p == hookCommit {
					f.b.hook = nil
					time.Sleep(30 * time.Millisecond) // older than the grace
					removed, err := sweep.run(f.open())
					if err != nil {
						t.Errorf("%s during the commit window: %v", sweep.name, err)
					}
					for _, n := range removed {
						if strings.HasPrefix(n, key+"/") {
							swept = append(swept, n)
						}
					}
				}
				return nil
			}
			res, err := f.promote(sess)
			if err != nil || !res.Promoted || res.Gen != 2 {
				t.Fatalf("promote = %+v, %v", res, err)
			}
			if len(swept) != 0 {
				t.Fatalf("%s swept %v while a promotion was between its file and its commit", sweep.name, swept)
			}
			f.holds(key, "b", 2)
		})
	}
}

// Reap sweeps by a snapshot of the records taken before its walk of the
// expired keys; a walk that lasts (thousands of keys, a reaper stalled)
// must not sweep what was promoted meanwhile: the generation a key's
// record names now, or a new key's first (found by an audit: both were
// swept, and both keys then resolved transcript-replaced). The stall is
// stood in for by the reaper's clock moving on two hours at the hook.
func TestReapSweepsNothingPromotedDuringItsWalk(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	old, busy, born := store.Key("github", "stall", "old"), store.Key("github", "stall", "busy"), store.Key("github", "stall", "born")
	f.now = time.Now().Add(-30 * 24 * time.Hour)
	f.run(old, "old")
	f.now = time.Time{}
	f.run(busy, "b1")
	var stall atomic.Int64
	r := f.open()
	r.hook = func(p, k string) error {
		if p == hookReapDelete && k == old {
			f.run(busy, "b2")
			f.run(born, "n1")
			stall.Store(int64(2 * time.Hour))
		}
		return nil
	}
	res, err := r.Reap(t.Context(), ReapOptions{TTL: 14 * 24 * time.Hour,
		Now: func() time.Time { return time.Now().Add(time.Duration(stall.Load())) }})
	if err != nil || !slices.Equal(res.Removed, []string{old}) {
		t.Fatalf("reap = %+v, %v", res, err)
	}
	for _, name := range res.Swept {
		if name == f.recordFile(busy) || name == f.recordFile(born) {
			t.Errorf("swept %s, which its key's record names", name)
		}
	}
	if len(res.Swept) != 1 || res.Swept[0] != old+"/" {
		// Not busy's first generation either: the snapshot had it as
		// busy's own.
		t.Errorf("swept %v, want only the reaped key's empty dir", res.Swept)
	}
	f.holds(busy, "b2", 2)
	f.holds(born, "n1", 1)
}

// The in-flight window is the longest a commit may follow its file's
// write on any worker, not this reaper's own request timeout: a promoter
// configured with a longer one (up to etcdmeta.MaxRequestTimeout) may
// still be retrying its commit after this reaper's timeout has passed
// many times over (found by an audit: a reaper with a 5 s timeout swept
// the file of a promotion six minutes in, which then landed and
// cold-started).
func TestInFlightWindowIsEveryPromotersTimeout(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t), func(c *Config) { c.RequestTimeout = etcdmeta.MaxRequestTimeout })
	key := store.Key("github", "in-flight", "slow promoter")
	f.run(key, "a")
	sess, _ := f.job(key, "b")
	var swept []string
	f.b.hook = func(p, _ string) error {
		if p == hookCommit {
			f.b.hook = nil
			reaper := f.open(func(c *Config) { c.RequestTimeout = 5 * time.Second })
			r, err := reaper.Reap(t.Context(), ReapOptions{Grace: 5 * time.Minute,
				Now: func() time.Time { return time.Now().Add(6 * time.Minute) }})
			if err != nil {
				t.Errorf("reap: %v", err)
			}
			swept = r.Swept
		}
		return nil
	}
	res, err := f.promote(sess)
	if err != nil || !res.Promoted || res.Gen != 2 {
		t.Fatalf("promote = %+v, %v", res, err)
	}
	for _, name := range swept {
		if strings.HasPrefix(name, key+"/0000000000000002-") {
			t.Fatalf("reap swept %s between the promotion's file and its commit", name)
		}
	}
	f.holds(key, "b", 2)
}

// A promoter that stalls between its file and its commit for longer than
// the window a reaper allows (a frozen host) commits nothing: its file may
// be gone. The job is promote-failed, its transcript in place, and its
// retry promotes.
func TestAStalledPromoterCommitsNothing(t *testing.T) {
	f := newFixture(t, etcdtest.Start1(t))
	key := store.Key("github", "in-flight", "stalled promoter")
	f.run(key, "a")
	sess, _ := f.job(key, "b")
	defer func(w time.Duration) { commitWindow = w }(commitWindow)
	commitWindow = 50 * time.Millisecond
	f.b.hook = func(p, _ string) error {
		if p == hookCommit {
			f.b.hook = nil
			time.Sleep(2 * commitWindow)
		}
		return nil
	}
	res, err := f.promote(sess)
	if err == nil || res.Promoted || res.Reason != gates.PromoteFailed {
		t.Fatalf("stalled promote = %+v, %v; want promote-failed", res, err)
	}
	f.holds(key, "a", 1)
	commitWindow = time.Minute
	if res, err := f.promote(sess); err != nil || !res.Promoted || res.Gen != 2 {
		t.Fatalf("retry = %+v, %v", res, err)
	}
	f.holds(key, "b", 2)
}

// A promoter whose host was suspended between its file and its commit (a
// VM paused, a laptop asleep) commits nothing once the wall clock, which
// the reaper judges the file's age by, is past the window: Go's timers
// and monotonic clock do not count a suspend, so the window's deadline had
// not fired and the commit landed, naming a file a reap may have swept.
func TestAPromoterSuspendedPastTheWindowCommitsNothing(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	key := store.Key("github", "in-flight", "suspended promoter")
	f.run(key, "a")
	sess, _ := f.job(key, "b")
	f.b.hook = func(p, _ string) error {
		if p == hookCommit {
			f.b.hook = nil
			f.now = time.Now().Add(commitWindow + time.Minute) // the wall clock after the suspend
		}
		return nil
	}
	res, err := f.promote(sess)
	if err == nil || res.Promoted || res.Reason != gates.PromoteFailed {
		t.Fatalf("promote after the suspend = %+v, %v; want promote-failed", res, err)
	}
	f.holds(key, "a", 1)
	if files := f.files(key); len(files) != 1 {
		t.Errorf("the key's files are %v, want only gen 1's: the uncommitted file removed", files)
	}
	f.now = time.Time{}
	if res, err := f.promote(sess); err != nil || !res.Promoted || res.Gen != 2 {
		t.Fatalf("retry = %+v, %v", res, err)
	}
	f.holds(key, "b", 2)
}

// Reap removes the directory of a key that has no record once it holds
// nothing and is older than the in-flight window; a directory a key's
// first promotion may have just made, or one of a key with a record, it
// keeps (found by an audit: every key ever made kept its directory, and
// every reap and check walked them all).
func TestReapRemovesEmptyKeyDirs(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	f.now = time.Now().Add(-30 * 24 * time.Hour)
	var gone []string
	for _, m := range []string{"a", "b", "c"} {
		key := store.Key("github", "empty-dirs", m)
		f.run(key, m)
		gone = append(gone, key)
	}
	f.now = time.Time{}
	kept := store.Key("github", "empty-dirs", "kept")
	f.run(kept, "k")
	if err := os.Remove(filepath.Join(f.dir, f.recordFile(kept))); err != nil {
		t.Fatal(err)
	}
	if r, err := f.b.Reap(t.Context(), ReapOptions{TTL: 14 * 24 * time.Hour}); err != nil || len(r.Removed) != len(gone) || len(r.Swept) != 0 {
		t.Fatalf("reap = %+v, %v; want %d keys removed and their dirs kept, just emptied", r, err, len(gone))
	}
	later := func() time.Time { return time.Now().Add(2 * time.Hour) }
	// An empty key dir is no finding of check's, with or without
	// --repair (Check's doc and fleet.md): reap alone removes it.
	for _, repair := range []bool{false, true} {
		var found []store.Finding
		if _, err := f.b.Check(t.Context(), CheckOptions{Repair: repair, Now: later}, func(fd store.Finding) error {
			if fd.Key != kept { // kept's file, removed above, is missing
				found = append(found, fd)
			}
			return nil
		}); err != nil || len(found) != 0 {
			t.Fatalf("check (repair %v) = %+v, %v; want no finding but kept's", repair, found, err)
		}
		for _, k := range gone {
			if _, err := os.Stat(filepath.Join(f.dir, k)); err != nil {
				t.Fatalf("check (repair %v) took %s's empty dir: %v", repair, k, err)
			}
		}
	}
	r, err := f.b.Reap(t.Context(), ReapOptions{Now: later})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(gone)
	var want []string
	for _, k := range gone {
		want = append(want, k+"/")
	}
	if !slices.Equal(r.Swept, want) {
		t.Fatalf("swept %v, want the reaped keys' dirs %v", r.Swept, want)
	}
	ents, err := os.ReadDir(f.dir)
	if err != nil || len(ents) != 2 || ents[0].Name() != shared.MarkName || ents[1].Name() != kept {
		t.Fatalf("the transcripts dir holds %v (%v), want only its mark and %s", ents, err, kept)
	}
	// The key is new again: its first promotion makes its dir anew.
	f.run(gone[0], "again")
	f.holds(gone[0], "again", 1)
}

// A generation whose first line cannot be read because another host
// removed it after the open (NFS: ESTALE) is transcript-replaced, the
// bytes its record describes undeliverable, as under the copy: not
// unparseable, which says the file is damaged. dump says it is missing.
func TestGenerationUnreadableAtItsFirstLineIsTranscriptReplaced(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	key := store.Key("github", "stale-header", "x")
	f.run(key, "one")
	f.b.hook = func(p, _ string) error {
		if p == hookHeader {
			os.Remove(filepath.Join(f.dir, f.recordFile(key)))
			return errors.New("stale") // the file is closed: its reads fail
		}
		return nil
	}
	defer func() { f.b.hook = nil }()
	sess, jobDir := resolveOn(t, f.s, key)
	if sess.Resume || sess.Reason != gates.TranscriptReplaced || sess.Base.Gen != 1 || len(stagedOf(t, jobDir)) != 0 {
		t.Fatalf("a generation whose first line cannot be read: %+v", sess)
	}
	var reps []Report
	if err := f.b.Inspect(context.Background(), InspectOptions{}, func(r Report) error { reps = append(reps, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(reps) != 1 || reps[0].Verdict == nil || reps[0].Verdict.Reason != string(gates.TranscriptReplaced) || !strings.Contains(reps[0].Problem, "missing") {
		t.Fatalf("dump of it: %+v", reps)
	}
	f.b.hook = nil
	appendMarker(t, jobDir, "two")
	if res, err := f.promote(sess); err != nil || !res.Promoted || res.Gen != 2 {
		t.Fatalf("the job's promotion onto the record: %+v, %v", res, err)
	}
	f.holds(key, "two", 2)
}

// A key reaped between a resolve's read of its record and its open of
// the generation (a reap deletes the record, then the files) is absent,
// as a resolve after the reap finds it: a cold start with no base, whose
// promotion makes the key anew. It is no transcript changed out of band
// (transcript-replaced), whose base, the reaped generation, would have
// the job's run superseded by a key that holds nothing. The key-dir store
// answers so (a reap moves the dir while the read waits for its lock).
// Found by RunModel's concurrent groups (a resolve beside a reap).
func TestKeyReapedUnderAResolveIsAbsent(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	key := store.Key("github", "reaped-under", "x")
	f.run(key, "one")
	f.reapAt(key, hookOpen, nil)
	sess, jobDir := resolveOn(t, f.s, key)
	f.b.hook = nil
	if sess.Resume || sess.Reason != gates.Absent || sess.Base != (store.Base{}) || len(stagedOf(t, jobDir)) != 0 {
		t.Fatalf("a resolve of a key reaped under it: %+v; want absent, no base", sess)
	}
	appendMarker(t, jobDir, "two")
	if res, err := f.promote(sess); err != nil || !res.Promoted || res.Gen != 1 {
		t.Fatalf("the job's promotion onto the key made anew: %+v, %v", res, err)
	}
}

// A key reaped after a resolve opened its generation, where the reads of
// the file then fail (NFS's ESTALE once another host removed it: the
// hooks close the file), is absent too, as at the open: at the first
// line's read, and under the copy. Transcript-replaced with the reaped
// generation as its base, the job's run was superseded by a key that
// holds nothing (superseded_by 0) and lost.
func TestKeyReapedUnderAResolvesReadsIsAbsent(t *testing.T) {
	etcdtest.Beside(t)
	for _, point := range []string{hookHeader, hookSource} {
		t.Run(point, func(t *testing.T) {
			f := newFixture(t, etcdtest.Start1(t))
			key := store.Key("github", "reaped-under-read", "x")
			f.run(key, "one")
			f.reapAt(key, point, errors.New("stale"))
			sess, jobDir := resolveOn(t, f.s, key)
			f.b.hook = nil
			if sess.Resume || sess.Reason != gates.Absent || sess.Base != (store.Base{}) || len(stagedOf(t, jobDir)) != 0 {
				t.Fatalf("a resolve of a key reaped under its read at %s: %+v; want absent, no base", point, sess)
			}
			appendMarker(t, jobDir, "two")
			if res, err := f.promote(sess); err != nil || !res.Promoted || res.Gen != 1 {
				t.Fatalf("the job's promotion onto the key made anew: %+v, %v", res, err)
			}
		})
	}
}
