package fleet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"sessdb/fleet/etcdmeta"
	"sessdb/fleet/shared"
	"sessdb/gates"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// statTally is the count of label in ts.
func statTally(ts []store.Tally, label string) int64 {
	for _, t := range ts {
		if t.Label == label {
			return t.N
		}
	}
	return -1
}

// dirPrint is every name under dir with its size and mtime.
func dirPrint(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		lines = append(lines, fmt.Sprintf("%s %v %d %d", p, fi.Mode(), fi.Size(), fi.ModTime().UnixNano()))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// Stats on a fleet counts what dump reports, in store.Stats' figures: the
// keys (layout etcd) by verdict, a key with a history and no record among
// them (absent), a name that is no key apart; the promotions and the
// refusal of the window from the histories, a key's entries that decode
// beside one that does not among them; the sizes of the generation
// files the records name; and the bytes etcd holds for the keys' records
// and histories. It writes nothing: etcd's revision and every name, size
// and mtime in the transcripts dir stay.
func TestStatsCountsTheFleet(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	var keys []string
	for _, n := range []string{"twice", "once", "stray", "missing"} {
		keys = append(keys, store.Key("github", "fleet-stats", n))
	}
	twice, once, stray, missing := keys[0], keys[1], keys[2], keys[3]
	f.run(twice, "t1")
	// Two jobs on gen 1: the first promotes gen 2, the second is
	// superseded.
	a, _ := f.job(twice, "t2")
	b, _ := f.job(twice, "t2b")
	if res, err := f.promote(a); err != nil || !res.Promoted {
		t.Fatalf("promote: %+v, %v", res, err)
	}
	if res, err := f.promote(b); err != nil || res.Promoted || res.Reason != gates.Superseded {
		t.Fatalf("the rival's promote: %+v, %v; want superseded", res, err)
	}
	f.run(once, "o1")
	f.strayHistory(stray)
	f.run(missing, "m1")
	if err := os.Remove(filepath.Join(f.dir, f.recordFile(missing))); err != nil {
		t.Fatal(err)
	}
	cli := c.Client(t)
	if _, err := cli.Put(t.Context(), f.prefix+"/record/not-a-key", "{}"); err != nil {
		t.Fatal(err)
	}
	// A history entry that does not decode: held in etcd, no promotion;
	// the key's entries that decode still count.
	if _, err := cli.Put(t.Context(), f.prefix+"/history/"+once+"/0000000000000005", "\xc1"); err != nil {
		t.Fatal(err)
	}
	// What etcd holds for the keys, and the files their records name.
	var held, files int64
	for _, k := range keys {
		for _, p := range []string{f.prefix + "/record/" + k, f.prefix + "/history/" + k + "/"} {
			resp, err := cli.Get(t.Context(), p, clientv3.WithPrefix())
			if err != nil {
				t.Fatal(err)
			}
			for _, kv := range resp.Kvs {
				if p == f.prefix+"/record/"+k && string(kv.Key) != p {
					continue
				}
				held += int64(len(kv.Key) + len(kv.Value))
			}
		}
	}
	for _, k := range []string{twice, once} {
		fi, err := os.Stat(filepath.Join(f.dir, f.recordFile(k)))
		if err != nil {
			t.Fatal(err)
		}
		files += fi.Size()
	}
	dirBefore := dirPrint(t, f.dir)
	revBefore, err := cli.Get(t.Context(), "/")
	if err != nil {
		t.Fatal(err)
	}

	st, err := f.b.Stats(t.Context(), StatsOptions{Window: time.Hour, Bounds: gates.Bounds{TTL: 14 * 24 * time.Hour}, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	p := st.Promotions
	promoted := p.Count(func(k store.PromotionKind) bool { return k.Outcome == string(gates.Promoted) })
	superseded := p.Count(func(k store.PromotionKind) bool { return k.Outcome == string(gates.Superseded) })
	for _, c := range []struct {
		what      string
		got, want int64
	}{
		{"entries", int64(st.Entries), 5},
		{"keys", int64(st.Keys), 4},
		{"other entries", int64(st.OtherEntries), 1},
		{"keys of layout etcd", statTally(st.Layouts, "etcd"), 4},
		{"keys of layout db", statTally(st.Layouts, "db"), 0},
		{"keys resumed", statTally(st.Verdicts, string(gates.Resumed)), 2},
		{"keys absent", statTally(st.Verdicts, string(gates.Absent)), 1},
		{"keys transcript-replaced", statTally(st.Verdicts, string(gates.TranscriptReplaced)), 1},
		{"promotions", promoted, 5},
		{"superseded", superseded, 1},
		{"transcript sizes counted", st.Bytes.N, 2},
		{"transcript bytes", st.TranscriptBytes, files},
		{"resume chains", st.ResumeChain.N, 3},
		{"etcd bytes", st.EtcdBytes, held},
		{"meta.db bytes", st.MetaDBBytes, 0},
		{"legacy bytes", st.LegacyBytes, 0},
	} {
		if c.got != c.want {
			t.Errorf("%s: %d; want %d", c.what, c.got, c.want)
		}
	}
	if st.Interrupted || held == 0 || files == 0 {
		t.Errorf("interrupted %v, %d bytes held, %d in files", st.Interrupted, held, files)
	}
	// A window of none counts no promotion; the rest stays.
	//lint:ignore SA1012 a nil ctx is what is tested
	if none, err := f.b.Stats(nil, StatsOptions{}); err != nil || none.Promotions.Count(nil) != 0 || none.Keys != 4 || none.EtcdBytes != held {
		t.Errorf("no window: %+v, %v; want no promotions, 4 keys, %d bytes held", none, err, held)
	}
	revAfter, err := cli.Get(t.Context(), "/")
	if err != nil {
		t.Fatal(err)
	}
	if revAfter.Header.Revision != revBefore.Header.Revision {
		t.Errorf("stats wrote to etcd: its revision went from %d to %d", revBefore.Header.Revision, revAfter.Header.Revision)
	}
	if after := dirPrint(t, f.dir); after != dirBefore {
		t.Errorf("stats changed the transcripts dir:\nbefore\n%s\nafter\n%s", dirBefore, after)
	}
}

// A stats stopped by its context returns the figures of the keys reported
// before, marked interrupted, with the context's error; etcd that does not
// answer, and a transcripts dir gone, are errors with no figures, as they
// stop dump.
func TestStatsStoppedOrFailing(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	const n = 20
	for i := range n {
		f.run(store.Key("github", "fleet-stats-stop", fmt.Sprint(i)), "one")
	}
	ctx, cancel := context.WithCancel(t.Context())
	// The clock in another zone: the figures are dated in UTC, as a
	// sessions root's are.
	zoned := func() time.Time { return time.Now().In(time.FixedZone("UTC+1", 3600)) }
	st, err := f.b.Stats(ctx, StatsOptions{Window: time.Hour, Workers: 1, Now: zoned, Progress: func(done, total int) {
		if done == 2 {
			cancel()
		}
	}})
	// The walk stops within its window and a page of the cancel (see
	// TestADumpStoppedByItsVisitListsNoMore), far before the 20th key.
	if !errors.Is(err, context.Canceled) || st == nil || !st.Interrupted || st.Keys < 2 || st.Keys >= n {
		t.Fatalf("stats cancelled after 2 keys: %+v, %v; want the figures of those keys at least, interrupted, and the cancel", st, err)
	}
	if got := st.Promotions.Count(nil); got != int64(st.Keys) || st.At.Location() != time.UTC {
		t.Errorf("cancelled after %d keys: %d promotions counted, dated %v; want one a key, in UTC", st.Keys, got, st.At)
	}

	away := f.dir + ".away"
	if err := os.Rename(f.dir, away); err != nil {
		t.Fatal(err)
	}
	st, err = f.b.Stats(t.Context(), StatsOptions{Window: time.Hour})
	if st != nil || !errors.Is(err, shared.ErrDirUnavailable) {
		t.Errorf("stats with the transcripts dir gone: %+v, %v; want no figures and ErrDirUnavailable", st, err)
	}
	if err := os.Rename(away, f.dir); err != nil {
		t.Fatal(err)
	}

	c.Stop(0)
	short := f.open(func(cfg *Config) { cfg.RequestTimeout = 300 * time.Millisecond })
	st, err = short.Stats(t.Context(), StatsOptions{Window: time.Hour})
	if st != nil || !errors.Is(err, etcdmeta.ErrUnavailable) {
		t.Errorf("stats with etcd stopped: %+v, %v; want no figures and ErrUnavailable", st, err)
	}
}

// A deadline of the caller's that passes in the middle of the walk ends
// it with ctx's error, the figures so far marked interrupted, not with
// etcdmeta.ErrUnavailable: the key's read was cut short by the caller,
// not left unanswered by etcd (as TestCheckEndedByTheCallersDeadlineMidWalk
// for check).
func TestStatsEndedByTheCallersDeadlineMidWalk(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "deadline", "stats")
	f.run(key, "a")
	ctx := deadlineOnCue(t.Context())
	reached := false
	f.b.hook = func(p, k string) error {
		if p == hookListed && k == key {
			reached = true
			ctx.pass() // the deadline passes before the key's history is read
		}
		return nil
	}
	defer func() { f.b.hook = nil }()
	st, err := f.b.Stats(ctx, StatsOptions{Window: time.Hour})
	if !reached {
		t.Fatalf("stats = %v before the key was listed", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, etcdmeta.ErrUnavailable) || st == nil || !st.Interrupted {
		t.Fatalf("stats = %+v, %v; want the figures so far, interrupted, and the caller's deadline, not etcd unavailable", st, err)
	}
}
