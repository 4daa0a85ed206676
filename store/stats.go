package store

import (
	"context"
	"errors"
	"math"
	"slices"
	"time"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/callerctx"
	"sessdb/internal/fsat"
	"sessdb/store/legacy"
	"sessdb/store/transcript"
)

// StatsOptions says which promotions Stats counts and how it walks.
type StatsOptions struct {
	// Window is how far back the promotions counted reach: the history
	// entries recorded at or after the walk's start minus Window (one
	// dated after the start, by a clock that was ahead, counts too). Zero
	// or less counts none.
	Window time.Duration
	// Workers is as in InspectOptions.
	Workers int
	// Progress is as in InspectOptions: Stats walks with InspectWith.
	Progress func(done, total int)
}

// Stats is what one walk of a sessions root (Store.Stats), or of a fleet
// (fleet.Backend.Stats), says about the whole store:
// its keys by layout and by verdict, the promotions of a recent window
// taken from the keys' histories, the distributions of transcript size,
// resume chain and context occupancy, and the bytes on disk.
//
// Every label Stats counts by is drawn from a fixed set (StatLayouts,
// StatReasons, StatOutcomes, StatStarts, StatRuns): a value read from disk
// that is not in its set counts as "unknown" (or, for an outcome, "other"),
// so a damaged or hostile meta.db cannot grow a dashboard's label space.
type Stats struct {
	// At is the store's clock when the walk began; the window ends there.
	At     time.Time
	Window time.Duration // StatsOptions.Window, as asked
	// Interrupted is set when the walk's context ended it early: every
	// figure covers only the entries reported before it stopped.
	Interrupted bool

	Entries      int // names under the root (a fleet's: in etcd) that were reported
	Keys         int // of them, the names that have the form of a key
	OtherEntries int // the others (a README, a stray file)

	// Layouts counts the keys by layout, Verdicts by the verdict a job
	// whose venue, pi version and model match the key's own stamps would
	// get now, each in its set's order with every label present.
	Layouts  []Tally
	Verdicts []Tally // an Undetermined verdict counts as its IfMatched

	// Promotions are the history entries recorded inside the window.
	Promotions Promotions

	// Bytes is the distribution of transcript sizes (keys whose
	// transcript is a regular file), ResumeChain of resume chains (keys
	// that record one), ContextPct of context occupancy in percent of the
	// window, rounded down as the context rung compares it (keys with a
	// reading whose window is known; over 100 when a reading is over its
	// window).
	Bytes, ResumeChain, ContextPct *Distribution

	TranscriptBytes int64 // the regular transcripts' total size
	MetaDBBytes     int64 // the meta.db files' total size
	// LegacyBytes is the legacy sidecar files' total size (pi-version,
	// venue, resume-chain, context and the legacy lock file); a legacy
	// promotion's .incoming temp is a transcript in flight, not counted.
	LegacyBytes int64
	// EtcdBytes is what a fleet's etcd holds for its keys: the etcd keys
	// and values of their records and history entries (KeyReport.EtcdBytes);
	// 0 on a sessions root, whose metadata is in its key dirs.
	EtcdBytes int64
}

// A Tally is the count of one label of a fixed set.
type Tally struct {
	Label string // a member of the set
	N     int64  // how many counted under it
}

// Promotions counts the history entries recorded inside the window.
// A key's history ring keeps its last db.HistoryLimit entries, so a
// window longer than a busy key's ring undercounts; TruncatedKeys says for
// how many keys that may have happened.
type Promotions struct {
	// Entries counts the entries by kind; a kind not in the map is zero.
	Entries map[PromotionKind]int64
	// Bytes is the transcript bytes of the entries that promoted.
	Bytes int64
	// TruncatedKeys counts the keys whose ring is full and whose oldest
	// entry is inside the window: older entries, maybe also inside it,
	// were pushed out, so every count is a lower bound.
	TruncatedKeys int
}

// PromotionKind classifies a history entry: Outcome is "promoted" or the
// refusal (StatOutcomes), Start how the job started, "resumed" or its cold
// reason (StatStarts), Run the run's shape (StatRuns).
type PromotionKind struct {
	Outcome string // "promoted" or the refusal; "other" for one not in StatOutcomes
	Start   string // "resumed" or the cold start's reason; "unknown" for one not in StatStarts
	Run     string // the run's shape; "unknown" when recorded so, not recorded, or not in StatRuns
}

// Count returns how many entries in the window match, summed over the
// kinds match accepts; a nil match accepts every kind.
func (p Promotions) Count(match func(PromotionKind) bool) int64 {
	var n int64
	for k, c := range p.Entries {
		if match == nil || match(k) {
			n += c
		}
	}
	return n
}

// Distribution counts values into fixed buckets and keeps them sorted for
// exact percentiles.
type Distribution struct {
	// Bounds are the buckets' inclusive upper bounds, ascending. Counts
	// has one more entry than Bounds: Counts[i] is the number of values
	// at most Bounds[i] and above Bounds[i-1]; the last, the values above
	// every bound. Counts are per bucket, not cumulative.
	Bounds []int64
	Counts []int64 // per bucket, len(Bounds)+1
	N      int64   // the values counted: the sum of Counts
	// Sum is the values' sum, held at math.MaxInt64 if it would overflow.
	Sum    int64
	values []int64 // sorted once the walk is over
}

// newDistribution is an empty distribution over bounds, with the extra
// bucket for the values above the last bound.
func newDistribution(bounds []int64) *Distribution {
	// A copy: the Stats it goes into is the caller's to change, and the
	// package's bounds are every later walk's buckets.
	return &Distribution{Bounds: slices.Clone(bounds), Counts: make([]int64, len(bounds)+1)}
}

// add counts v. Every value is also kept, for exact quantiles rather than
// bucket estimates: one int64 per key, 8 MB a million keys.
func (d *Distribution) add(v int64) {
	i, _ := slices.BinarySearch(d.Bounds, v) // the first bound >= v
	d.Counts[i]++
	d.N++
	d.Sum = saturatingAdd(d.Sum, v)
	d.values = append(d.values, v)
}

// Quantile returns the nearest-rank q-quantile of the values (q in (0, 1]:
// the smallest value with at least q*N values at or below it); false when
// there are none.
func (d *Distribution) Quantile(q float64) (int64, bool) {
	if len(d.values) == 0 {
		return 0, false
	}
	rank := int(math.Ceil(q * float64(len(d.values))))
	return d.values[min(max(rank, 1), len(d.values))-1], true
}

// Max returns the largest value; false when there are none.
func (d *Distribution) Max() (int64, bool) { return d.Quantile(1) }

// The buckets' upper bounds. Transcript sizes in powers of four around the
// default 8 MiB cap; resume chains dense where a chain bound is usually
// set; context occupancy dense towards pi's compaction threshold (91% of a
// 200000 window) and the full window. They are part of the metric
// contract (docs/stats.md): changing one changes every dashboard's series.
var (
	bytesBounds = []int64{1 << 10, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 8 << 20, 16 << 20, 64 << 20}
	chainBounds = []int64{0, 1, 2, 3, 5, 10, 20, 50, 100}
	pctBounds   = []int64{25, 50, 60, 70, 80, 85, 90, 95, 100}
)

// The label sets.
var (
	statLayouts = []string{string(LayoutDB), string(LayoutMixed), string(LayoutLegacy), string(LayoutEmpty), statLayoutEtcd, statUnknown}
	// statColdReasons are the reasons a resolve cold-starts with, in
	// gates' order.
	statColdReasons = tokens(gates.ColdReasons())
	// An operator's accept (check --repair --accept) is an outcome of its
	// own: neither a job's promotion nor a refusal.
	statOutcomes = []string{string(gates.Promoted), string(gates.Superseded), string(gates.TranscriptRewritten), string(gates.RunIncomplete), AcceptedOutcome, statOther}
	// unknown is a run recorded so (sessdb could not read it) and one not
	// recorded (an entry from before run shapes were): neither is known.
	statRuns = []string{string(transcript.Answered), string(transcript.Errored), string(transcript.Unanswered), string(transcript.Unchanged), string(transcript.Unknown)}
)

// tokens spells reasons as the strings stats labels counts with.
func tokens(rs []gates.Reason) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = string(r)
	}
	return out
}

const (
	statUnknown = "unknown"
	statOther   = "other"
	// statLayoutEtcd is a fleet's key (fleet.LayoutEtcd): its record in
	// etcd, its transcripts in the fleet's shared dir.
	statLayoutEtcd = "etcd"
)

// StatLayouts returns the layouts Stats counts keys by: db, mixed, legacy,
// empty, etcd (a fleet's key: its record in etcd, fleet.Backend.Stats),
// and unknown for a key dir that could not be read (a link, not a
// directory, locked, unreadable).
func StatLayouts() []string { return slices.Clone(statLayouts) }

// StatReasons returns the verdicts Stats counts keys by, which are also
// the ways a job starts (StatStarts): resumed, every reason a resolve can
// cold-start with, and unknown (no verdict could be judged, or a recorded
// reason this sessdb does not know).
func StatReasons() []string {
	return append(append([]string{string(gates.Resumed)}, statColdReasons...), statUnknown)
}

// StatStarts returns how a job can have started, as Promotions records it:
// the same set as StatReasons.
func StatStarts() []string { return StatReasons() }

// StatOutcomes returns the outcomes of a history entry: promoted, the
// three recorded refusals, an operator's accept, and other for one this
// sessdb does not know. A reap's reaping entry is not counted at all.
func StatOutcomes() []string { return slices.Clone(statOutcomes) }

// StatRuns returns the run shapes: answered, errored, unanswered,
// unchanged, and unknown (recorded so: a run sessdb could not read; not
// recorded, as in entries written before shapes were; or not a shape
// this sessdb knows).
func StatRuns() []string { return slices.Clone(statRuns) }

// StatBounds returns the buckets' upper bounds of the three distributions:
// transcript bytes, resume chain, context percent.
func StatBounds() (bytes, chain, pct []int64) {
	return slices.Clone(bytesBounds), slices.Clone(chainBounds), slices.Clone(pctBounds)
}

// Stats walks the root once, read-only, as InspectWith does (the same
// worker pool, locks and guarantees), reading every key's whole history,
// and sums what it finds. When ctx ends the walk early, it returns the
// figures of the entries reported so far, marked Interrupted, together
// with ctx's error; any other error (an unreadable root) returns nil.
func (s *Store) Stats(ctx context.Context, opts StatsOptions) (*Stats, error) {
	ctx = callerctx.Of(ctx) // nil is context.Background()
	// As InspectWith would say, before the clock a zero Store lacks.
	if s.root == "" {
		return nil, ErrNoSessionsRoot
	}
	iopts := InspectOptions{History: db.HistoryLimit, Workers: opts.Workers, Progress: opts.Progress, LegacyBytes: true}
	return SumStats(ctx, s.opts.Now(), opts.Window, func(visit func(KeyReport) error) error {
		return s.InspectWith(ctx, iopts, visit)
	})
}

// SumStats sums the reports of one walk into a Stats, as Store.Stats
// sums a sessions root's: for a backend whose own walk reports its keys
// (a fleet's: fleet.Backend.Stats). at is when the walk began, the
// window's end; walk is called once, with the function to give each
// report to, one report at a time (never from two goroutines at once, as
// InspectWith calls its visit), and each report should carry every entry
// of its key's history (db.HistoryLimit) for the promotions to be
// counted whole. A report of a key that has gone (verdict absent, no
// layout) is not
// counted, nor is a reap's reaping entry. When walk returns ctx's error
// (ctx ended), SumStats returns the figures of the reports given before,
// marked Interrupted, with that error; any other error returns nil.
func SumStats(ctx context.Context, at time.Time, window time.Duration, walk func(visit func(KeyReport) error) error) (*Stats, error) {
	ctx = callerctx.Of(ctx) // nil is context.Background()
	st := &Stats{At: at.UTC(), Window: window}
	st.Bytes, st.ResumeChain, st.ContextPct = newDistribution(bytesBounds), newDistribution(chainBounds), newDistribution(pctBounds)
	st.Layouts, st.Verdicts = tallies(statLayouts), tallies(StatReasons())
	st.Promotions.Entries = map[PromotionKind]int64{}
	from := st.At.Add(-window)
	err := walk(func(r KeyReport) error {
		st.add(r, from)
		return nil
	})
	if err != nil && !(ctx.Err() != nil && errors.Is(err, ctx.Err())) {
		// Not ctx's own: an ended ctx makes no other error an interrupt
		// (a root that cannot be read has no figures, however soon).
		return nil, err
	}
	st.Interrupted = err != nil
	for _, d := range []*Distribution{st.Bytes, st.ResumeChain, st.ContextPct} {
		slices.Sort(d.values)
	}
	return st, err
}

// tallies is a zero tally for every label, in the set's order: a label
// with no key still shows, so a dashboard's series never vanish.
func tallies(labels []string) []Tally {
	out := make([]Tally, len(labels))
	for i, l := range labels {
		out[i].Label = l
	}
	return out
}

// count adds one to label's tally, or to the last (unknown) when label is
// not in the set.
func count(ts []Tally, label string) {
	for i := range ts {
		if ts[i].Label == label {
			ts[i].N++
			return
		}
	}
	ts[len(ts)-1].N++
}

// add sums one report into st. Sums saturate instead of wrapping: a
// sparse file or a hostile record can report any size, and a dashboard
// should show a pinned maximum, not a negative total.
func (st *Stats) add(r KeyReport, from time.Time) {
	// A key dir removed between the listing and its read (a reap, an
	// operator moving it away) is no longer in the store: counted, it
	// would be a key of layout unknown, which reads as one that could not
	// be read.
	if v := r.Verdict; v != nil && v.Reason == string(gates.Absent) && r.Layout == "" {
		return
	}
	st.Entries++
	if !ValidKey(r.Name) {
		st.OtherEntries++
		return
	}
	st.Keys++
	count(st.Layouts, string(r.Layout))
	verdict := statUnknown
	if v := r.Verdict; v != nil {
		verdict = v.Reason
		if verdict == Undetermined {
			verdict = v.IfMatched
		}
	}
	count(st.Verdicts, verdict)
	if t := r.Transcript; t != nil && t.Regular {
		st.Bytes.add(t.Bytes)
		st.TranscriptBytes = saturatingAdd(st.TranscriptBytes, t.Bytes)
	}
	if c := r.ResumeChain; c != nil {
		st.ResumeChain.add(int64(min(*c, math.MaxInt64))) // a hostile record may hold any uint64
	}
	if c := r.Context; c != nil && c.Pct != nil {
		st.ContextPct.add(*c.Pct)
	}
	if m := r.MetaPages; m != nil {
		st.MetaDBBytes = saturatingAdd(st.MetaDBBytes, m.Bytes)
	}
	if r.LegacyBytes != nil {
		st.LegacyBytes = saturatingAdd(st.LegacyBytes, *r.LegacyBytes)
	}
	if r.EtcdBytes != nil {
		st.EtcdBytes = saturatingAdd(st.EtcdBytes, *r.EtcdBytes)
	}
	if st.Window > 0 {
		st.addHistory(r.History, r.HistoryFull, from)
	}
}

// addHistory counts a key's history entries dated at or after from. A
// full ring whose oldest entry is already inside the window may have lost
// older ones that were inside it too: that key is counted as truncated.
// full says the ring is full where hs holds fewer (a fleet's entries
// that do not decode are left out of hs).
func (st *Stats) addHistory(hs []HistoryReport, full bool, from time.Time) {
	p := &st.Promotions
	if (len(hs) >= db.HistoryLimit || full) && len(hs) > 0 && !hs[0].At.Before(from) {
		p.TruncatedKeys++
	}
	for _, h := range hs {
		// A reap's reaping entry is no job's outcome: it stays only in a
		// key an interrupted reap left whole, once per attempt.
		if h.At.Before(from) || h.Outcome == reapingOutcome {
			continue
		}
		k := PromotionKind{Outcome: member(statOutcomes, h.Outcome, statOther), Start: string(gates.Resumed), Run: member(statRuns, h.Run, statUnknown)}
		if !h.Resumed {
			k.Start = member(statColdReasons, h.Reason, statUnknown)
		}
		p.Entries[k]++
		if k.Outcome == string(gates.Promoted) && h.Bytes > 0 {
			p.Bytes = saturatingAdd(p.Bytes, h.Bytes)
		}
	}
}

// member returns v when it is in set, else fallback.
func member(set []string, v, fallback string) string {
	if slices.Contains(set, v) {
		return v
	}
	return fallback
}

// saturatingAdd is a+b, held at math.MaxInt64 where that would overflow;
// every b summed is a size or a count, never negative.
func saturatingAdd(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// legacyBytes sums the sizes of the legacy sidecar files among names, by
// lstat through the key dir's descriptor: a link counts as itself, never
// as what it points to.
func legacyBytes(k *keyDir, names []string) *int64 {
	var n int64
	for _, name := range names {
		if legacy.IsTemp(name) {
			continue
		}
		if st, err := fsat.LstatAt(k.dir, name); err == nil && fsat.IsRegular(&st) {
			n = saturatingAdd(n, st.Size)
		}
	}
	return &n
}
