package store

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"sessdb/internal/pientry"
	"slices"
	"strconv"
	"testing"
	"time"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/faults"
	"sessdb/internal/fsat"
	"sessdb/store/transcript"
)

// statsRoot builds a root whose every figure Stats reports is known: db
// keys with promotions inside and outside the window, each refusal, a
// cold start for another venue, a key whose history ring overflowed
// inside the window, a legacy key, an empty key dir, a key dir that is a
// link, and a name that is not a key. It returns the store with its clock
// at the moment the stats are taken, and the keys by role.
func statsRoot(t *testing.T) (s *Store, root string, keys map[string]string) {
	s, root, clock := newTestStore(t, gates.Bounds{})
	at := clock.now.Add(3 * 24 * time.Hour) // the stats' "now"
	keys = map[string]string{}
	for _, role := range []string{"refusals", "venue", "busy", "legacy", "empty", "link"} {
		keys[role] = Key("stats", "acme/widget", role)
	}

	// refusals: a cold start just before the window, then inside it a
	// promotion that supersedes a second job on the same base, a run
	// refused as incomplete, a rewritten prefix.
	clock.now = at.Add(-24*time.Hour - time.Nanosecond)
	runJob(t, s, keys["refusals"], localJob(), PromoteRequest{}, "base")
	clock.now = at.Add(-20 * time.Hour)
	sessB, dirB, dataB := contractJob(t, s, keys["refusals"], "B")
	sessC, dirC, dataC := contractJob(t, s, keys["refusals"], "C")
	stage(t, dirB, answeredTurn(dataB, "B", 100))
	stage(t, dirC, answeredTurn(dataC, "C", 100))
	if r := mustPromote(t, s, sessB, PromoteRequest{PiVersion: testPi}); !r.Promoted {
		t.Fatalf("B: %+v", r)
	}
	if r := mustPromote(t, s, sessC, PromoteRequest{PiVersion: testPi}); r.Reason != gates.Superseded {
		t.Fatalf("C: %+v", r)
	}
	clock.now = at.Add(-10 * time.Hour)
	sess, dir, data := contractJob(t, s, keys["refusals"], "incomplete")
	stage(t, dir, pientry.Message(data, "u1", "user", "q", "", 0))
	if r := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi, Require: transcript.Answered}); r.Reason != gates.RunIncomplete {
		t.Fatalf("incomplete: %+v", r)
	}
	clock.now = at.Add(-5 * time.Hour)
	sess, dir, data = contractJob(t, s, keys["refusals"], "rewriter")
	stage(t, dir, data[:len(data)-10])
	if r := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi}); r.Reason != gates.TranscriptRewritten {
		t.Fatalf("rewriter: %+v", r)
	}

	// venue: a cold start exactly at the window's start (inside it), then
	// a job on another venue, which starts cold as venue-changed.
	clock.now = at.Add(-24 * time.Hour)
	runJob(t, s, keys["venue"], localJob(), PromoteRequest{}, "local")
	clock.now = at.Add(-2 * time.Hour)
	podman := localJob()
	podman.Venue = "podman"
	if sess, _ := runJob(t, s, keys["venue"], podman, PromoteRequest{}, "podman"); sess.Reason != gates.VenueChanged {
		t.Fatalf("venue: %+v", sess)
	}

	// busy: more promotions inside the window than its ring keeps.
	for i := range db.HistoryLimit + 1 {
		clock.now = at.Add(-time.Hour + time.Duration(i)*time.Second)
		runJob(t, s, keys["busy"], localJob(), PromoteRequest{}, "turn "+strconv.Itoa(i))
	}

	// legacy: the four sidecars, the lock file, and an .incoming temp (a
	// transcript in flight, not metadata).
	ld := filepath.Join(root, keys["legacy"])
	for name, v := range map[string]string{
		TranscriptName: string(transcriptBytes(at.Add(-48*time.Hour), "legacy")),
		"pi-version":   testPi, "venue": "local", "resume-chain": "7", "context": "150000 200000 " + testModel,
		"lock": "", "current.jsonl.4242.0.incoming": "half a transcript",
	} {
		writeFile(t, filepath.Join(ld, name), v)
	}
	os.Mkdir(filepath.Join(root, keys["empty"]), 0o700)
	os.Symlink(ld, filepath.Join(root, keys["link"]))
	writeFile(t, filepath.Join(root, "README.txt"), "not a key\n")
	clock.now = at
	return s, root, keys
}

func writeFile(t *testing.T, p, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

func fileSize(t *testing.T, p string) int64 {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

func tally(t *testing.T, ts []Tally, label string) int64 {
	t.Helper()
	for _, x := range ts {
		if x.Label == label {
			return x.N
		}
	}
	t.Fatalf("no label %q in %v", label, ts)
	return 0
}

func TestStatsCountsWhatTheRootHolds(t *testing.T) {
	s, root, keys := statsRoot(t)
	st, err := s.Stats(context.Background(), StatsOptions{Window: 24 * time.Hour, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if st.Interrupted || st.Entries != 7 || st.Keys != 6 || st.OtherEntries != 1 {
		t.Fatalf("entries %d keys %d other %d interrupted %v", st.Entries, st.Keys, st.OtherEntries, st.Interrupted)
	}
	for label, want := range map[string]int64{"db": 3, "mixed": 0, "legacy": 1, "empty": 1, "unknown": 1} {
		if got := tally(t, st.Layouts, label); got != want {
			t.Errorf("layout %s: %d keys, want %d", label, got, want)
		}
	}
	// A matching job resumes the db keys and the legacy one; the empty
	// dir is absent, the link not a regular file.
	for label, want := range map[string]int64{"resumed": 4, "absent": 1, "not-a-regular-file": 1} {
		if got := tally(t, st.Verdicts, label); got != want {
			t.Errorf("verdict %s: %d keys, want %d", label, got, want)
		}
	}

	p := st.Promotions
	count := func(outcome, start, run string) int64 {
		return p.Count(func(k PromotionKind) bool {
			return (outcome == "" || k.Outcome == outcome) && (start == "" || k.Start == start) && (run == "" || k.Run == run)
		})
	}
	cases := []struct {
		outcome, start, run string
		want                int64
	}{
		// refusals: B resumed; venue: local (at the window's very start) and podman; busy: its ring.
		{"promoted", "", "", 1 + 2 + db.HistoryLimit},
		{"promoted", "resumed", "", 1 + db.HistoryLimit},
		{"promoted", "absent", "", 1},
		{"promoted", "venue-changed", "", 1},
		{"superseded", "resumed", "", 1},
		{"run-incomplete", "resumed", "unanswered", 1},
		{"transcript-rewritten", "resumed", "", 1},
		{"other", "", "", 0},
		{"", "", "", 1 + 2 + db.HistoryLimit + 3},
	}
	for _, c := range cases {
		if got := count(c.outcome, c.start, c.run); got != c.want {
			t.Errorf("promotions %q/%q/%q: %d, want %d", c.outcome, c.start, c.run, got, c.want)
		}
	}
	if p.TruncatedKeys != 1 {
		t.Errorf("truncated keys: %d, want 1 (busy)", p.TruncatedKeys)
	}
	// The promoted bytes are the history's own, summed independently.
	from := st.At.Add(-24 * time.Hour)
	var bytes, entries int64
	for _, k := range []string{keys["refusals"], keys["venue"], keys["busy"]} {
		for _, h := range historyOf(t, root, k) {
			if h.At >= from.UnixNano() {
				entries++
				if h.Outcome == "" {
					bytes += h.Bytes
				}
			}
		}
	}
	if p.Bytes != bytes || p.Count(nil) != entries {
		t.Errorf("promoted bytes %d of %d entries, want %d of %d", p.Bytes, p.Count(nil), bytes, entries)
	}

	var transcripts, metas int64
	for _, role := range []string{"refusals", "venue", "busy", "legacy"} {
		transcripts += fileSize(t, filepath.Join(root, keys[role], TranscriptName))
		if role != "legacy" {
			metas += fileSize(t, filepath.Join(root, keys[role], db.FileName))
		}
	}
	var sidecars int64
	for _, n := range []string{"pi-version", "venue", "resume-chain", "context", "lock"} {
		sidecars += fileSize(t, filepath.Join(root, keys["legacy"], n))
	}
	if st.TranscriptBytes != transcripts || st.MetaDBBytes != metas || st.LegacyBytes != sidecars {
		t.Errorf("bytes: transcripts %d meta.db %d legacy %d; want %d %d %d", st.TranscriptBytes, st.MetaDBBytes, st.LegacyBytes, transcripts, metas, sidecars)
	}
	if st.Bytes.N != 4 || st.Bytes.Sum != transcripts {
		t.Errorf("size distribution: %d values summing to %d, want 4 summing to %d", st.Bytes.N, st.Bytes.Sum, transcripts)
	}
	// Chains: refusals 1 (B resumed once), venue 0, busy 64 (65 deliveries
	// after one cold start), legacy 7.
	if mx, _ := st.ResumeChain.Max(); st.ResumeChain.N != 4 || st.ResumeChain.Sum != 1+0+db.HistoryLimit+7 || mx != db.HistoryLimit {
		t.Errorf("chain distribution: %+v", st.ResumeChain)
	}
	if mx, ok := st.ContextPct.Max(); !ok || mx != 75 {
		t.Errorf("context max %d, want the legacy key's 75%%", mx)
	}
}

// An entry is in the window from its very start; a zero window counts
// nothing; a longer one reaches the entry just before.
func TestStatsWindow(t *testing.T) {
	s, _, _ := statsRoot(t)
	for _, c := range []struct {
		window time.Duration
		want   int64
	}{
		{0, 0},
		{24 * time.Hour, 1 + 2 + db.HistoryLimit + 3},
		{24*time.Hour + time.Nanosecond, 1 + 2 + db.HistoryLimit + 3 + 1},
		{90 * time.Minute, db.HistoryLimit},
	} {
		st, err := s.Stats(context.Background(), StatsOptions{Window: c.window})
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Promotions.Count(nil); got != c.want {
			t.Errorf("window %v: %d entries, want %d", c.window, got, c.want)
		}
	}
}

// What a damaged or hostile meta.db holds cannot grow the label sets: an
// unknown outcome, reason and run count as other and unknown, and a chain
// beyond int64 is held at its largest value.
func TestStatsBoundsWhatDiskSays(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "base")
	dir, err := fsat.OpenDir(filepath.Join(root, testKey))
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	d, err := db.OpenWriter(dir, db.FileName, db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = d.Update(func(tx *db.Tx) error {
		if err := tx.PutResumeChain(math.MaxUint64); err != nil {
			return err
		}
		_, err := tx.AppendHistory(db.HistoryEntry{Gen: 1, At: clock.now.UnixNano(), Outcome: "martian", Reason: "made-up", Run: "sideways", Bytes: 5})
		return err
	})
	d.Close()
	if err != nil {
		t.Fatal(err)
	}
	st, err := s.Stats(context.Background(), StatsOptions{Window: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	want := map[PromotionKind]int64{
		{Outcome: "promoted", Start: "absent", Run: "unanswered"}: 1, // runJob appends a user line
		{Outcome: "other", Start: "unknown", Run: "unknown"}:      1,
	}
	if len(st.Promotions.Entries) != len(want) {
		t.Fatalf("kinds %v, want %v", st.Promotions.Entries, want)
	}
	for k, n := range want {
		if st.Promotions.Entries[k] != n {
			t.Errorf("%+v: %d, want %d (all: %v)", k, st.Promotions.Entries[k], n, st.Promotions.Entries)
		}
	}
	if mx, _ := st.ResumeChain.Max(); mx != math.MaxInt64 || st.ResumeChain.Counts[len(st.ResumeChain.Counts)-1] != 1 {
		t.Errorf("chain of MaxUint64: max %d, buckets %v", mx, st.ResumeChain.Counts)
	}
	for _, label := range [][]string{StatOutcomes(), StatStarts(), StatRuns()} {
		for _, l := range label {
			if l == "martian" || l == "made-up" || l == "sideways" {
				t.Fatalf("a label from disk joined a label set: %v", label)
			}
		}
	}
}

func TestStatsInterruptedAndUnreadable(t *testing.T) {
	s, _, _ := statsRoot(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	st, err := s.Stats(ctx, StatsOptions{Window: time.Hour})
	if !errors.Is(err, context.Canceled) || st == nil || !st.Interrupted || st.Entries != 0 {
		t.Fatalf("cancelled: %+v, %v", st, err)
	}

	missing, err := New(filepath.Join(t.TempDir(), "nowhere"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := missing.Stats(context.Background(), StatsOptions{Window: time.Hour}); err == nil || st != nil {
		t.Fatalf("a root that does not exist: %+v, %v", st, err)
	}
}

// Buckets hold the values at most their bound and above the one before;
// percentiles are nearest-rank over the exact values.
func TestDistribution(t *testing.T) {
	d := newDistribution([]int64{0, 10, 100})
	for _, v := range []int64{0, 1, 10, 11, 100, 101, math.MaxInt64} {
		d.add(v)
	}
	if want := []int64{1, 2, 2, 2}; !slices.Equal(d.Counts, want) {
		t.Errorf("counts %v, want %v", d.Counts, want)
	}
	if d.N != 7 || d.Sum != math.MaxInt64 {
		t.Errorf("n %d sum %d: the sum saturates", d.N, d.Sum)
	}

	d = newDistribution(pctBounds)
	if _, ok := d.Quantile(0.5); ok {
		t.Error("a quantile of no values")
	}
	for v := int64(100); v >= 1; v-- {
		d.add(v)
	}
	d.values = slices.Sorted(slices.Values(d.values)) // as Stats leaves them
	for q, want := range map[float64]int64{0.5: 50, 0.95: 95, 0.951: 96, 1: 100, 0.001: 1} {
		if got, _ := d.Quantile(q); got != want {
			t.Errorf("q%v = %d, want %d", q, got, want)
		}
	}
}

// A reap that stopped after committing its reaping entry leaves the key
// whole with that entry; stats counts no outcome for it, however many
// times a failing reap tries (found by an audit: each counted as an
// unknown outcome, "other"). The reaps after the first record no entry
// of their own (TestAReapOfADirTheFileSystemWillNotMoveSaysWhyAndKeepsTheKey).
func TestStatsSkipsReapingEntries(t *testing.T) {
	s, _, clock := newTestStore(t, gates.Bounds{TTL: opsTTL})
	expiredKey(t, s, clock, testKey)
	for range 2 {
		faults.Set(func(p faults.Point) error {
			if p == faults.ReapBeforeRename {
				return errors.New("stopped after the reaping entry")
			}
			return nil
		})
		s.Reap(false)
		faults.Set(nil)
	}
	if h := historyOf(t, s.Root(), testKey); len(h) != 2 || h[1].Outcome != reapingOutcome {
		t.Fatalf("history = %+v, want the promotion and one reaping entry", h)
	}
	st, err := s.Stats(context.Background(), StatsOptions{Window: 365 * 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for k, n := range st.Promotions.Entries {
		if k.Outcome != string(gates.Promoted) {
			t.Errorf("stats counted %d entries of outcome %q; want the one promotion only", n, k.Outcome)
		}
	}
	if got := st.Promotions.Count(nil); got != 1 {
		t.Fatalf("stats counted %d history entries, want 1", got)
	}
}

// A key reaped (or moved) between the walk's listing and the read of its
// dir is no longer in the store: stats must not count it, least of all as
// a key of layout unknown, which the documented alert reads as a key dir
// that could not be read ("run sessdb check"). Every key still there is
// counted once, and the totals stay self-consistent.
func TestStatsKeyRemovedDuringTheWalk(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	var keys []string
	for i := range 12 {
		k := Key("stats", "acme/widget", "vanish-"+strconv.Itoa(i))
		writeFile(t, filepath.Join(root, k, TranscriptName), string(transcriptBytes(s.opts.Now(), "x")))
		keys = append(keys, k)
	}
	slices.Sort(keys)
	gone := keys[len(keys)-1] // not yet read after the first report: the walk reads at most 8 ahead
	removed := false
	st, err := s.Stats(context.Background(), StatsOptions{Window: time.Hour, Workers: 1, Progress: func(done, total int) {
		if !removed {
			removed = true
			if err := os.RemoveAll(filepath.Join(root, gone)); err != nil {
				t.Error(err)
			}
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if st.Keys != 11 || st.Entries != 11 || st.OtherEntries != 0 {
		t.Errorf("entries %d, keys %d, others %d: want 11, 11, 0 (the removed key is not in the store)", st.Entries, st.Keys, st.OtherEntries)
	}
	var layouts, verdicts int64
	for _, x := range st.Layouts {
		layouts += x.N
	}
	for _, x := range st.Verdicts {
		verdicts += x.N
	}
	if layouts != int64(st.Keys) || verdicts != int64(st.Keys) || st.Bytes.N != int64(st.Keys) {
		t.Errorf("layouts %d, verdicts %d, transcripts %d: each should sum to the keys, %d", layouts, verdicts, st.Bytes.N, st.Keys)
	}
	if n := tally(t, st.Layouts, "unknown"); n != 0 {
		t.Errorf("layout unknown: %d, want 0", n)
	}
	if n := tally(t, st.Verdicts, string(gates.Absent)); n != 0 {
		t.Errorf("verdict absent: %d, want 0", n)
	}
}
