package store

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"sessdb/gates"
)

// chaosTTL is the TTL of every chaos child's store: short beside the
// clock jumps, so that resolves see keys expire and reaps remove them.
const chaosTTL = time.Hour

// TestChaos runs SESSDB_CHAOS_PROCS processes (default 4) of
// SESSDB_CHAOS_GOROUTINES goroutines (default 2) for SESSDB_CHAOS_SECONDS
// (default 3; .ci/long runs it longer) on one sessions root of 6 keys,
// with a TTL of an hour. Each goroutine does, at random: a job (resolve,
// append a unique marker line, promote with the ticket), a Reap, a Check
// with repair, a Quarantine of a key, an Accept of a key, or a jump of its
// process's clock (the store's Options.Now, shared by the process's
// goroutines): forward past the TTL, back by minutes, back to before the
// goroutine's last promotion, or set right. Every outcome is logged with
// the real times it began and ended (one host: the processes share
// CLOCK_REALTIME) and the range its process's clock read meanwhile. Then
// a check --repair, a check and a reap (no TTL) run on the real clock, and
// the test asserts (SESSDB_CHAOS_SEED varies the processes' choices):
//
//   - No process crashed or hung (killed a minute after the end), and
//     Resolve, Reap and Check returned no error, nor did a reap list a key
//     as Failed: whatever the clocks say, they give verdicts, not faults. Quarantine and Accept are refused
//     only for a key absent, or moved aside by another while they waited
//     for its lock (their docs); Accept's other refusals are
//     ErrNotAccepted.
//   - Every promote is promoted, superseded or locked, or promote-failed
//     only while a reap removed or a quarantine moved its key: a promotion
//     waiting for the lock then fails, writing nothing (operations.md,
//     reap and --quarantine); nothing else (README's promote table).
//   - After the final repair a check finds no problem, every key's
//     transcript resumes, described by its record (size, CRC32C, gen) and
//     not torn, and nothing else is left under the root: no temp, no
//     .reaped-* dir, no moved-aside meta.db; only key dirs (empty ones
//     too: reap keeps those for the TTL by their mtime) and the
//     .quarantine-* dirs sessdb never removes. No check during the run
//     found a problem (nothing in it damages a file), but for one: a
//     reap-owned dir taken for an interrupted reap's, by a check or
//     another reap, while a reap that reported removing that key was
//     under way (see checkLiveOwned).
//   - A quarantine dir holds at the end what it held when Quarantine
//     returned: sessdb never writes in one, nor removes it.
//   - Every marker in a key's final transcript, and in each quarantine
//     dir's, is an acknowledged promotion of that key, in the order of
//     their generations: a refused or failed promote wrote nothing, and a
//     resumed run never brings back a conversation removed since (it is
//     superseded).
//   - No two acknowledged promotions of a key got the same generation
//     unless a removal of the key (a reap's or a quarantine's: the key is
//     made anew at gen 1) could have come between them (a lost update).
//   - Every acknowledged promotion's marker is in its key's final
//     transcript, unless (1) a quarantine dir of the key holds it: the
//     operator moved the conversation aside, where it stays; or (2) a
//     later acknowledged promotion of the key began cold on a base at or
//     above its generation: a key expired by that process's clock is a
//     cold start whose run replaces the conversation (README's ladder,
//     operations.md "The host's clock"); or (3) a reap reported removing
//     the key after the promotion began, and the key's last promotion
//     could have been older than the TTL by the reaper's clock: a
//     promotion the key could have held then (this one, or one whose
//     promote overlapped the time from this one's start to the reap's end)
//     was dated by its own process's clock more than the TTL before the
//     latest the reaper's clock read. A reap removes only a key it judged
//     expired again under the key's lock; one that removed a key no clock
//     had expired lost a promotion.
//
// Each exception is a documented way a conversation leaves its key, and
// each is bounded by the logged times and clocks, not by "something
// happened to the key".
func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos run; runs without -short")
	}
	procs, gor, secs := envInt("SESSDB_CHAOS_PROCS", 4), envInt("SESSDB_CHAOS_GOROUTINES", 2), envInt("SESSDB_CHAOS_SECONDS", 3)
	root := filepath.Join(t.TempDir(), "sessions")
	// Made first: a check or a reap of a root not made yet fails, as the
	// CLI's do (exit 1), which is not what this run is about.
	if err := os.Mkdir(root, 0o700); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	until := start.Add(time.Duration(secs) * time.Second)
	lines := runChildren(t, "chaos", procs, until.Add(60*time.Second), func(p int) []string {
		return []string{"SESSDB_ROOT=" + root, fmt.Sprintf("SESSDB_UNTIL=%d", until.UnixNano()),
			fmt.Sprintf("SESSDB_GOROUTINES=%d", gor), fmt.Sprintf("SESSDB_SEED=%d", p+envInt("SESSDB_CHAOS_SEED", 1)*100)}
	})
	ran := time.Since(start)
	log := parseChaos(t, lines)
	log.index()
	log.checkOutcomes(t)
	log.checkLiveOwned(t)
	finalChaosCheck(t, root, log)
	log.checkMarkers(t)

	t.Logf("%d processes x %d goroutines, %v: %d operations (%.0f/s)", procs, gor, ran.Round(time.Millisecond), log.ops, float64(log.ops)/ran.Seconds())
	outcomes := make([]string, 0, len(log.outcomes))
	for k, n := range log.outcomes {
		outcomes = append(outcomes, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(outcomes)
	t.Logf("outcomes: %s", strings.Join(outcomes, ", "))
	t.Logf("markers: %d acknowledged, %d in the final transcripts, %d in quarantine dirs only, %d replaced by a cold start, %d removed by a reap",
		log.acked, log.kept, log.quarantined, log.replaced, log.reapedAway)
	if log.acked == 0 {
		t.Fatal("no promotion acknowledged: the run proves nothing")
	}
}

// chaosClock is a process's clock: the real one plus an offset that jumps.
// Each jump is kept, so that span can say what the clock may have read
// during an operation (another goroutine may jump it meanwhile).
type chaosClock struct {
	mu    sync.Mutex
	off   time.Duration
	jumps []chaosJump
}

type chaosJump struct {
	at  time.Time // real
	off time.Duration
}

func (c *chaosClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.off)
}

func (c *chaosClock) set(off time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.off = off
	c.jumps = append(c.jumps, chaosJump{time.Now(), off})
}

// span is the earliest and the latest the clock read between the real
// times t0 and t1.
func (c *chaosClock) span(t0, t1 time.Time) (lo, hi time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	first := time.Duration(0)
	var offs []time.Duration
	for _, j := range c.jumps {
		switch {
		case !j.at.After(t0):
			first = j.off
		case !j.at.After(t1):
			offs = append(offs, j.off)
		}
	}
	minOff, maxOff := first, first
	for _, o := range offs {
		minOff, maxOff = min(minOff, o), max(maxOff, o)
	}
	return t0.Add(minOff), t1.Add(maxOff)
}

// runChaosChild is the child side of TestChaos.
func runChaosChild() int {
	n, _ := strconv.ParseInt(os.Getenv("SESSDB_UNTIL"), 10, 64)
	until := time.Unix(0, n)
	seed, _ := strconv.ParseInt(os.Getenv("SESSDB_SEED"), 10, 64)
	clock := &chaosClock{}
	s, err := New(os.Getenv("SESSDB_ROOT"), Options{Bounds: gates.Bounds{TTL: chaosTTL}, Now: clock.Now, LockTimeout: 2 * time.Second})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	keys := loadKeys("chaos", 6)
	out := bufio.NewWriter(os.Stdout)
	fmt.Fprintln(out, "ready")
	out.Flush()
	var mu sync.Mutex
	emit := func(format string, args ...any) {
		mu.Lock()
		fmt.Fprintf(out, format+"\n", args...)
		mu.Unlock()
	}
	// times is the real interval of an operation and what the clock read.
	times := func(t0 time.Time) string {
		t1 := time.Now()
		lo, hi := clock.span(t0, t1)
		return fmt.Sprintf("%d %d %d %d", t0.UnixNano(), t1.UnixNano(), lo.UnixNano(), hi.UnixNano())
	}
	var lastPromoted sync.Map // goroutine -> time.Time: its last promotion, by the clock
	var wg sync.WaitGroup
	for g := 0; g < envInt("SESSDB_GOROUTINES", 2); g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(seed*1000 + int64(g)))
			for i := 0; time.Now().Before(until); i++ {
				key := keys[rng.Intn(len(keys))]
				t0 := time.Now()
				switch x := rng.Intn(100); {
				case x < 70:
					if at, ok := chaosJob(s, clock, key, fmt.Sprintf("c%d-g%d-%d", seed, g, i), times, emit); ok {
						lastPromoted.Store(g, at)
					}
				case x < 78:
					res, err := s.Reap(false)
					if err != nil {
						emit("error reap %v (%v)", err, res.Skipped)
					}
					emit("reap %s %s %s %s %d", times(t0), chaosList(res.Removed), chaosList(res.Finished), chaosList(res.Restored), len(res.Swept))
					for _, name := range res.Failed {
						emit("reap-failed %s %s %s", times(t0), name, strings.ReplaceAll(res.Skipped[name], " ", "_"))
					}
				case x < 85:
					var found []string
					sum, err := s.Check(context.Background(), CheckOptions{Repair: true}, func(f Finding) error {
						if f.Severity == SeverityProblem {
							found = append(found, chaosFinding(f))
						}
						return nil
					})
					if err != nil {
						emit("error check %v", err)
					}
					emit("check %s %d %d %d %s", times(t0), sum.Problems, sum.Repaired, sum.Remaining, chaosList(found))
				case x < 88:
					aside, err := s.Quarantine(key)
					switch {
					case errors.Is(err, fs.ErrNotExist):
						emit("quarantine-refused %s %s absent", times(t0), key)
					case err != nil && strings.Contains(err.Error(), "moved aside while this quarantine waited for its lock"):
						// Another quarantine moved it first: what is at the
						// key's name now was not locked, and is not moved.
						emit("quarantine-refused %s %s moved-meanwhile", times(t0), key)
					case err != nil:
						emit("error quarantine %s: %v", key, err)
					}
					if err != nil {
						break
					}
					// What the dir holds once moved: nothing writes in it
					// again (a promotion waiting for the lock fails).
					size := int64(-1)
					if st, err := os.Lstat(filepath.Join(s.Root(), aside, TranscriptName)); err == nil {
						size = st.Size()
					}
					emit("quarantine %s %s %s %d", times(t0), key, aside, size)
				case x < 90:
					res, err := s.Accept(key)
					if errors.Is(err, ErrNotAccepted) || errors.Is(err, fs.ErrNotExist) {
						emit("accept-refused %s %s", times(t0), key)
						break
					} else if err != nil {
						emit("error accept %s: %v", key, err)
						break
					}
					emit("accept %s %s %d %t", times(t0), key, res.Gen, res.Already)
				default:
					var off time.Duration
					kind := ""
					switch y := rng.Intn(4); y {
					case 0:
						kind, off = "ahead", time.Until(clock.Now())+chaosTTL+time.Duration(rng.Int63n(int64(chaosTTL)))
					case 1:
						kind, off = "back", time.Until(clock.Now())-time.Duration(1+rng.Intn(30))*time.Minute
					case 2:
						at, ok := lastPromoted.Load(g)
						if !ok {
							continue
						}
						kind, off = "before-promotion", time.Until(at.(time.Time).Add(-time.Duration(1+rng.Intn(90))*time.Minute))
					default:
						kind = "right"
					}
					clock.set(off)
					emit("jump %s %d", kind, off)
				}
			}
		}(g)
	}
	wg.Wait()
	mu.Lock()
	out.Flush()
	mu.Unlock()
	return 0
}

// chaosJob is one job on key: resolve, append marker, promote. It returns
// the promotion's date by the clock when it was promoted.
func chaosJob(s *Store, clock *chaosClock, key, marker string, times func(time.Time) string, emit func(string, ...any)) (time.Time, bool) {
	jobDir, err := os.MkdirTemp("", "sessdb-chaos-")
	if err != nil {
		emit("error %v", err)
		return time.Time{}, false
	}
	defer os.RemoveAll(jobDir)
	t0 := time.Now()
	sess, err := s.Resolve(key, localJob(), jobDir)
	if err != nil {
		emit("error resolve %s %v", key, err)
		return time.Time{}, false
	}
	p := filepath.Join(jobDir, StagedDirName, TranscriptName)
	data, err := os.ReadFile(p)
	if err != nil {
		emit("error read staged %v", err)
		return time.Time{}, false
	}
	if len(data) == 0 {
		data = transcriptBytes(clock.Now())
	}
	data = append(data, entryLine(marker)...)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		emit("error %v", err)
		return time.Time{}, false
	}
	p0 := time.Now()
	res, err := s.Promote(sess, PromoteRequest{PiVersion: testPi})
	emit("job %s %d %s %s %t %d %s %d %s", times(t0), p0.UnixNano(), key, sess.Reason, sess.Resume, sess.Base.Gen, res.Reason, res.Gen, marker)
	if err != nil {
		emit("cause %s %s %v", marker, res.Reason, err)
	}
	return clock.Now(), res.Promoted
}

// chaosFinding is a problem a check --repair found, as its line lists it:
// one field of the line, and one item of the list. A repair's text has
// commas too ("removed by the roll-forward, or gone since it was found"),
// which split one finding in two, the second no kind at all. The path
// comes last: a finding only the key named ("link(<key>:)", TestChaos at
// 3fa4009) did not say which of the key's files it was about.
func chaosFinding(f Finding) string {
	field := strings.NewReplacer(" ", "_", ",", ";")
	return fmt.Sprintf("%s(%s:%s:%s)", f.Kind, f.Key, field.Replace(f.Repair), field.Replace(f.Path))
}

func chaosList(names []string) string {
	if len(names) == 0 {
		return "-"
	}
	return strings.Join(names, ",")
}

// chaosOp is one logged operation: real times t0..t1 (p0: the promote's
// start), and lo..hi, what its process's clock read meanwhile.
type chaosOp struct {
	kind               string
	t0, t1, lo, hi, p0 int64
	key                string
	verdict, reason    gates.Reason
	resume             bool
	base, gen          uint64
	marker             string
	removed            []string
	finished           []string // reap-owned dirs it reported (reap: finished; check: reap-interrupted)
	line               string
	aside              string // quarantine: the dir's name
	size               int64  // quarantine: its transcript's size once moved, -1 for none
}

// around logs the operations whose real times come within 50 ms of j's.
func (l *chaosLog) around(t *testing.T, j *chaosOp) {
	for _, o := range l.all {
		if o.t0 != 0 && o.t1 > j.t0-50e6 && o.t0 < j.t1+50e6 && o != j {
			t.Logf("  near %s: %s (from %+d us, to %+d us)", j.marker, o.line, (o.t0-j.p0)/1000, (o.t1-j.p0)/1000)
		}
	}
	t.Logf("  it: %s", j.line)
}

type chaosLog struct {
	ops      int
	jobs     []*chaosOp
	byMarker map[string]*chaosOp
	reaps    []*chaosOp // with removals
	quars    []*chaosOp
	// liveOwned are the reaps and checks that took a reap-owned dir for
	// an interrupted reap's (see checkLiveOwned).
	liveOwned []*chaosOp

	// Per key, sorted (index).
	removals, reapsOf, ackedOf, coldOf map[string][]*chaosOp
	longest                            int64 // the longest operation, ns
	outcomes                           map[string]int
	causes                             map[string]string // marker -> its promote's error
	all                                []*chaosOp

	// Filled by the final checks.
	final                             map[string][]string            // key -> markers of its transcript
	inQuar                            map[string]map[string]struct{} // key -> markers in its quarantine dirs
	acked                             int
	kept                              int
	quarantined, replaced, reapedAway int
	reapRemovals                      int
}

func parseChaos(t *testing.T, lines []string) *chaosLog {
	l := &chaosLog{byMarker: map[string]*chaosOp{}, outcomes: map[string]int{}, causes: map[string]string{}}
	i64 := func(s string) int64 { n, _ := strconv.ParseInt(s, 10, 64); return n }
	for _, line := range lines {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		op := &chaosOp{kind: f[0]}
		if len(f) >= 5 && f[0] != "jump" && f[0] != "cause" && f[0] != "error" {
			op.t0, op.t1, op.lo, op.hi = i64(f[1]), i64(f[2]), i64(f[3]), i64(f[4])
		}
		op.line = line
		l.all = append(l.all, op)
		switch f[0] {
		case "job": // job t0 t1 lo hi p0 key verdict resume base reason gen marker
			l.ops++
			op.p0, op.key, op.verdict, op.resume = i64(f[5]), f[6], gates.Reason(f[7]), f[8] == "true"
			op.base, op.reason, op.gen, op.marker = uint64(i64(f[9])), gates.Reason(f[10]), uint64(i64(f[11])), f[12]
			l.jobs = append(l.jobs, op)
			l.byMarker[op.marker] = op
			l.outcomes["promote "+string(op.reason)]++
			if op.reason == gates.Promoted {
				l.acked++
				if op.resume {
					l.outcomes["promoted resumed"]++
				} else {
					l.outcomes["promoted cold ("+string(op.verdict)+")"]++
				}
			}
		case "reap": // reap t0 t1 lo hi removed finished restored swept
			l.ops++
			l.outcomes["reap"]++
			if f[5] != "-" {
				op.removed = strings.Split(f[5], ",")
				l.reaps = append(l.reaps, op)
				l.reapRemovals += len(op.removed)
				l.outcomes["reap removals"] += len(op.removed)
			}
			if f[7] != "-" {
				t.Errorf("a reap restored a reap-owned dir, though no reap was killed: %s", line)
			}
			if f[6] != "-" {
				op.finished = strings.Split(f[6], ",")
				l.liveOwned = append(l.liveOwned, op)
			}
			l.outcomes["reap swept temps"] += int(i64(f[8]))
		case "check": // check t0 t1 lo hi problems repaired remaining found
			l.ops++
			l.outcomes["check --repair"]++
			if f[8] != "-" {
				for _, k := range strings.Split(f[8], ",") {
					kind, rest, _ := strings.Cut(k, "(")
					if kind == string(KindReapInterrupted) {
						op.finished = append(op.finished, ReapedPrefix+rest[:32])
						continue
					}
					t.Errorf("a check --repair during the run found %s, though nothing damages a file: %s", k, line)
				}
				if len(op.finished) > 0 {
					l.liveOwned = append(l.liveOwned, op)
				}
			}
		case "reap-failed": // reap-failed t0 t1 lo hi name why
			t.Errorf("a reap failed on %s: %s", f[5], strings.ReplaceAll(f[6], "_", " "))
		case "quarantine": // quarantine t0 t1 lo hi key aside
			l.ops++
			l.outcomes["quarantine"]++
			op.key, op.aside, op.size = f[5], f[6], i64(f[7])
			l.quars = append(l.quars, op)
		case "quarantine-refused": // quarantine-refused t0 t1 lo hi key why
			l.ops++
			l.outcomes["quarantine refused ("+f[6]+")"]++
		case "accept":
			l.ops++
			if f[7] == "true" {
				l.outcomes["accept (already)"]++
			} else {
				l.outcomes["accept (new gen)"]++
			}
		case "accept-refused":
			l.ops++
			l.outcomes["accept refused"]++
		case "jump":
			l.ops++
			l.outcomes["jump "+f[1]]++
		case "cause": // cause marker reason error...
			l.causes[f[1]] = strings.Join(f[3:], " ")
		case "error":
			t.Errorf("chaos worker: %s", line)
		default:
			t.Errorf("unknown line: %s", line)
		}
	}
	return l
}

// index sorts the log's operations per key, for the checks' searches.
func (l *chaosLog) index() {
	l.removals, l.reapsOf, l.ackedOf, l.coldOf = map[string][]*chaosOp{}, map[string][]*chaosOp{}, map[string][]*chaosOp{}, map[string][]*chaosOp{}
	for _, r := range l.reaps {
		for _, key := range r.removed {
			l.removals[key] = append(l.removals[key], r)
			l.reapsOf[key] = append(l.reapsOf[key], r)
		}
		l.longest = max(l.longest, r.t1-r.t0)
	}
	for _, q := range l.quars {
		l.removals[q.key] = append(l.removals[q.key], q)
		l.longest = max(l.longest, q.t1-q.t0)
	}
	for _, j := range l.jobs {
		if j.reason == gates.Promoted {
			l.ackedOf[j.key] = append(l.ackedOf[j.key], j)
			if !j.resume {
				l.coldOf[j.key] = append(l.coldOf[j.key], j)
			}
		}
		l.longest = max(l.longest, j.t1-j.t0)
	}
	for _, ops := range l.removals {
		sort.Slice(ops, func(a, b int) bool { return ops[a].t0 < ops[b].t0 })
	}
	for _, m := range []map[string][]*chaosOp{l.reapsOf, l.coldOf} {
		for _, ops := range m {
			sort.Slice(ops, func(a, b int) bool { return ops[a].t1 < ops[b].t1 })
		}
	}
	for _, ops := range l.ackedOf {
		sort.Slice(ops, func(a, b int) bool { return ops[a].p0 < ops[b].p0 })
	}
}

// removedDuring says whether a reap reported removing key, or a
// quarantine moved it, at a time that may fall in [from, to] (real ns).
func (l *chaosLog) removedDuring(key string, from, to int64) bool {
	rs := l.removals[key]
	for i := sort.Search(len(rs), func(i int) bool { return rs[i].t0 >= to }) - 1; i >= 0 && rs[i].t0 >= from-l.longest; i-- {
		if rs[i].t1 > from {
			return true
		}
	}
	return false
}

// checkOutcomes asserts every promote's outcome is a documented one, and
// that no two acknowledged promotions of a key share a generation with no
// removal of the key between them.
func (l *chaosLog) checkOutcomes(t *testing.T) {
	gens := map[string]map[uint64][]*chaosOp{}
	for _, j := range l.jobs {
		switch j.reason {
		case gates.Promoted:
			if gens[j.key] == nil {
				gens[j.key] = map[uint64][]*chaosOp{}
			}
			gens[j.key][j.gen] = append(gens[j.key][j.gen], j)
		case gates.Superseded, gates.Locked:
		case gates.PromoteFailed:
			if !l.removedDuring(j.key, j.p0, j.t1) {
				t.Errorf("promote-failed with no reap or quarantine of key %s during the promote: %s (%s)", j.key, j.marker, l.causes[j.marker])
				l.around(t, j)
			}
		default:
			t.Errorf("promote %s (key %s): %s, not a documented outcome here", j.marker, j.key, j.reason)
		}
	}
	for key, byGen := range gens {
		for gen, js := range byGen {
			// In the order they began: a removal between each two that
			// follow each other is one between any two.
			sort.Slice(js, func(a, b int) bool { return js[a].p0 < js[b].p0 })
			for a := 1; a < len(js); a++ {
				x, y := js[a-1], js[a]
				if !l.removedDuring(key, min(x.p0, y.p0), max(x.t1, y.t1)) {
					t.Errorf("lost update: key %s gen %d acknowledged twice, %s and %s, no removal of the key between them", key, gen, x.marker, y.marker)
				}
			}
		}
	}
}

// checkLiveOwned asserts that every reap-owned dir a reap finished, or a
// check reported reap-interrupted, during the run (no reap is killed in
// it) was a live reap's: a reap that reported removing that key overlaps
// it. Both wait at a reap-owned dir with no meta.db for a reap at work on
// it (RELIABILITY §5ac), and took it for an interrupted reap's before (a
// report, no loss: the live reap holds the dir's lock until its meta.db
// is unlinked, and the two removals race only over what is left); a wait
// past the lock timeout still may. One with no live reap of its key
// would be a defect.
func (l *chaosLog) checkLiveOwned(t *testing.T) {
	for _, o := range l.liveOwned {
		for _, name := range o.finished {
			key, _ := ReapedKey(name)
			if key == "" {
				key = strings.TrimPrefix(name, ReapedPrefix)
			}
			if !l.reapedDuring(key, o.t0, o.t1) {
				t.Errorf("a reap-owned dir of %s reported with no reap of it under way: %s", key, o.line)
			}
			l.outcomes[o.kind+" took a live reap's dir for an interrupted one's"]++
		}
	}
}

// finalChaosCheck repairs, checks and reaps the root on the real clock, then
// asserts what is left and records each key's markers.
func finalChaosCheck(t *testing.T, root string, l *chaosLog) {
	s, err := New(root, Options{LockTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Check(context.Background(), CheckOptions{Repair: true}, nil); err != nil {
		t.Fatalf("final check --repair: %v", err)
	}
	sum, err := s.Check(context.Background(), CheckOptions{}, func(f Finding) error {
		if f.Severity == SeverityProblem {
			t.Errorf("after the final repair, check finds %s in %s: %s", f.Kind, f.Path, f.Detail)
		}
		return nil
	})
	if err != nil || sum.Problems != 0 {
		t.Errorf("final check: %d problems, %v", sum.Problems, err)
	}
	if res, err := s.Reap(false); err != nil || len(res.Removed)+len(res.Finished)+len(res.Restored)+len(res.Swept)+len(res.Failed) != 0 {
		t.Errorf("final reap (no TTL) did something or failed: %+v, %v", res, err)
	}
	l.final, l.inQuar = map[string][]string{}, map[string]map[string]struct{}{}
	ents, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		name := e.Name()
		dir := filepath.Join(root, name)
		switch {
		case ValidKey(name) && e.IsDir():
			onlyStoreFiles(t, dir)
			if _, err := os.Lstat(filepath.Join(dir, TranscriptName)); err != nil {
				continue // an empty key dir, or one holding its lock's meta.db
			}
			sess, data := checkDescribed(t, s, root, name)
			if !sess.Resume {
				t.Errorf("key %s has a transcript but resolves %s", name, sess.Reason)
			}
			l.final[name] = l.markersIn(t, "key "+name, name, data)
		case strings.HasPrefix(name, QuarantinePrefix) && e.IsDir():
			key := strings.TrimPrefix(name, QuarantinePrefix)
			if len(key) < 32 || !ValidKey(key[:32]) {
				t.Errorf("a quarantine dir of no key: %s", name)
				continue
			}
			key = key[:32]
			onlyStoreFiles(t, dir)
			data, err := os.ReadFile(filepath.Join(dir, TranscriptName))
			size := int64(len(data))
			if err != nil {
				size = -1
			}
			for _, q := range l.quars {
				if q.aside == name && q.size != size {
					t.Errorf("%s: its transcript is %d bytes, %d when the quarantine returned: changed since", name, size, q.size)
				}
			}
			if err != nil {
				continue
			}
			if len(data) > 0 && data[len(data)-1] != '\n' {
				t.Errorf("%s: a torn transcript", name)
			}
			if l.inQuar[key] == nil {
				l.inQuar[key] = map[string]struct{}{}
			}
			for _, m := range l.markersIn(t, name, key, data) {
				l.inQuar[key][m] = struct{}{}
			}
		default:
			t.Errorf("left under the root: %s", name)
		}
	}
}

// onlyStoreFiles asserts dir holds nothing but a transcript and a meta.db.
func onlyStoreFiles(t *testing.T, dir string) {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if n := e.Name(); n != TranscriptName && n != "meta.db" || !e.Type().IsRegular() {
			t.Errorf("left in %s: %s (%v)", filepath.Base(dir), n, e.Type())
		}
	}
}

// markersIn returns the markers of a transcript of key, asserting each is
// an acknowledged promotion of key, in the order of their generations.
func (l *chaosLog) markersIn(t *testing.T, where, key string, data []byte) []string {
	var ms []string
	var last uint64
	for _, line := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		m := entryText([]byte(line))
		if m == "" {
			continue
		}
		j := l.byMarker[m]
		switch {
		case j == nil:
			t.Errorf("%s holds %s, which no job logged", where, m)
		case j.key != key || j.reason != gates.Promoted:
			t.Errorf("%s holds %s, a job of key %s whose promote was %s", where, m, j.key, j.reason)
		case j.gen <= last:
			t.Errorf("%s holds %s (gen %d) after a promotion of gen %d", where, m, j.gen, last)
		default:
			last = j.gen
		}
		ms = append(ms, m)
	}
	return ms
}

// checkMarkers asserts every acknowledged promotion's marker is in its
// key's final transcript, or left it in one of the three documented ways.
func (l *chaosLog) checkMarkers(t *testing.T) {
	inFinal := map[string]struct{}{}
	for _, ms := range l.final {
		for _, m := range ms {
			inFinal[m] = struct{}{}
		}
	}
	for _, p := range l.jobs {
		if p.reason != gates.Promoted {
			continue
		}
		if _, ok := inFinal[p.marker]; ok {
			l.kept++
			continue
		}
		if _, ok := l.inQuar[p.key][p.marker]; ok {
			l.quarantined++
			continue
		}
		if l.replacedCold(p) {
			l.replaced++
			continue
		}
		if l.reapedExpired(p) {
			l.reapedAway++
			continue
		}
		t.Errorf("acknowledged promotion lost: key %s gen %d %s (resolved %s, base %d), in no final transcript or quarantine dir, replaced by no cold start, removed by no reap that could judge it expired",
			p.key, p.gen, p.marker, p.verdict, p.base)
	}
}

// reapedDuring says whether a reap reported removing key at a time that
// may fall in [from, to].
func (l *chaosLog) reapedDuring(key string, from, to int64) bool {
	for _, r := range l.reapsOf[key] {
		if r.t0 < to && r.t1 > from {
			return true
		}
	}
	return false
}

// replacedCold: a later acknowledged promotion of p's key began cold on a
// base at or above p's generation, its resolve ending after p's promote
// began.
func (l *chaosLog) replacedCold(p *chaosOp) bool {
	cs := l.coldOf[p.key]
	for i := sort.Search(len(cs), func(i int) bool { return cs[i].t1 > p.p0 }); i < len(cs); i++ {
		if q := cs[i]; q != p && q.base >= p.gen {
			return true
		}
	}
	return false
}

// reapedExpired: a reap reported removing p's key after p's promote
// began, and a promotion the key could have held then (p, or one whose
// promote overlapped the time from p's start to the reap's end) was
// dated more than the TTL before the latest its reaper's clock read.
func (l *chaosLog) reapedExpired(p *chaosOp) bool {
	rs, ds := l.reapsOf[p.key], l.ackedOf[p.key]
	next := sort.Search(len(ds), func(i int) bool { return ds[i].p0 >= p.p0-l.longest })
	earliest := p.lo // the earliest date a candidate could carry
	for i := sort.Search(len(rs), func(i int) bool { return rs[i].t1 > p.p0 }); i < len(rs); i++ {
		r := rs[i]
		for ; next < len(ds) && ds[next].p0 < r.t1; next++ {
			if ds[next].t1 > p.p0 {
				earliest = min(earliest, ds[next].lo)
			}
		}
		if time.Duration(r.hi-earliest) > chaosTTL {
			return true
		}
	}
	return false
}

// A check line lists each finding once, whatever its repair's text: a
// reap-interrupted finding (a live reap's dir, which the run allows) whose
// repair says "x, y" is one finding of the reap, no second finding "y)"
// that nothing allows.
func TestChaosLogReadsARepairWithACommaAsOneFinding(t *testing.T) {
	name := newReapedName(testKey)
	f := Finding{Path: name, Key: testKey, Kind: KindReapInterrupted, Severity: SeverityProblem,
		Repair: "not repaired: reap " + testKey + ": the key is gone (renamed to " + name + "), but its removal stopped"}
	l := parseChaos(t, []string{"check 1 2 1 2 1 0 1 " + chaosList([]string{chaosFinding(f)})})
	if len(l.liveOwned) != 1 || len(l.liveOwned[0].finished) != 1 || l.liveOwned[0].finished[0] != ReapedPrefix+testKey {
		t.Errorf("the check's reap-owned dirs: %+v; want the one finding's", l.liveOwned)
	}
}
