package store

import (
	"bufio"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sessdb/gates"
)

// TestLoad runs SESSDB_LOAD_PROCS processes (default 4) of
// SESSDB_LOAD_GOROUTINES goroutines (default 3) for SESSDB_LOAD_SECONDS
// (default 2; the long run is this test with a larger value) against two
// sessions roots: a hot one of 4 keys where jobs resolve, append a unique
// marker and promote while dumps walk it, and a wider one of 64 keys where
// jobs race a reaper that expires everything at once. It asserts zero torn
// keys, zero lost or shared acknowledged promotions on the hot root, zero
// crashes, every promote promoted, superseded or locked (promote-failed
// only where the reaper removed a key under a waiting writer), and every
// acknowledged promotion of the hot root present, in order, in its key's
// final transcript; it reports operations per second, resolve and promote
// latency percentiles and the superseded and locked rates.
func TestLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("load test; runs without -short")
	}
	procs, gor, secs := envInt("SESSDB_LOAD_PROCS", 4), envInt("SESSDB_LOAD_GOROUTINES", 3), envInt("SESSDB_LOAD_SECONDS", 2)
	hot, wide := filepath.Join(t.TempDir(), "hot"), filepath.Join(t.TempDir(), "wide")
	until := time.Now().Add(time.Duration(secs) * time.Second)

	lines := runChildren(t, "load", procs, until.Add(2*time.Minute), func(p int) []string {
		return []string{"SESSDB_HOT=" + hot, "SESSDB_WIDE=" + wide, fmt.Sprintf("SESSDB_UNTIL=%d", until.UnixNano()),
			fmt.Sprintf("SESSDB_GOROUTINES=%d", gor), fmt.Sprintf("SESSDB_SEED=%d", p)}
	})
	r := summarize(t, lines)

	s, err := New(hot, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range loadKeys("hot", 4) {
		if _, err := s.RollForward(key); err != nil {
			t.Fatal(err)
		}
		sess, data := checkDescribed(t, s, hot, key)
		acked := r.acked[key]
		var max uint64
		for g := range acked {
			max = max2(max, g)
		}
		if max == 0 {
			continue
		}
		if !sess.Resume || sess.Gen() != max || markerOf(data, 1) != acked[max].marker {
			t.Errorf("key %s ends at gen %d %q (%s); last acknowledged gen %d %q", key, sess.Gen(), markerOf(data, 1), sess.Reason, max, acked[max].marker)
		}
		// The job contract makes the acknowledged promotions of a key one
		// line of descent: each was made onto the one before it, so the
		// final transcript holds every acknowledged marker, in order.
		gens := make([]uint64, 0, len(acked))
		for g := range acked {
			gens = append(gens, g)
		}
		sort.Slice(gens, func(i, j int) bool { return gens[i] < gens[j] })
		rest := string(data)
		for _, g := range gens {
			i := strings.Index(rest, `"content":"`+acked[g].marker+`"`)
			if i < 0 {
				t.Errorf("key %s: the promotion acknowledged as gen %d (%s) is lost from the final transcript", key, g, acked[g].marker)
				break
			}
			rest = rest[i:]
		}
		for _, h := range historyOf(t, hot, key) {
			if h.Outcome != "" {
				continue // a refusal: recorded, nothing promoted
			}
			if a, ok := acked[h.Gen]; !ok || a.bytes != h.Bytes {
				t.Errorf("key %s history gen %d (%d bytes) does not match an acknowledged promotion (%+v, %v)", key, h.Gen, h.Bytes, a, ok)
			}
		}
	}
	ws, _ := New(wide, Options{})
	ws.Inspect(0, func(kr KeyReport) error {
		if kr.Problem != "" || kr.MetaError != "" {
			t.Errorf("wide root: %s: %s%s", kr.Name, kr.Problem, kr.MetaError)
		}
		if ValidKey(kr.Name) {
			checkDescribed(t, ws, wide, kr.Name)
		}
		return nil
	})
	total := len(lines)
	t.Logf("%d processes x %d goroutines, %ds: %d operations, %.0f ops/s", procs, gor, secs, total, float64(total)/float64(secs))
	t.Logf("resolve p50 %v p99 %v (n=%d); promote p50 %v p99 %v (n=%d)", pct(r.resolve, 50), pct(r.resolve, 99), len(r.resolve), pct(r.promote, 50), pct(r.promote, 99), len(r.promote))
	t.Logf("promotions: %d promoted, %d superseded (%.1f%%), %d locked (%.2f%%, wait p50 %v max %v), %d promote-failed (reaped under a waiting writer); dumps %d, reaps %d removing %d keys",
		r.promoted, r.superseded, 100*float64(r.superseded)/float64(max(1, len(r.promote))), len(r.locked), 100*float64(len(r.locked))/float64(max(1, len(r.promote))), pct(r.locked, 50), pct(r.locked, 100), r.failed, r.dumps, r.reaps, r.reaped)
	for cause, n := range r.causes {
		t.Logf("promote-failed cause: %s (%d)", cause, n)
	}
	if r.promoted == 0 {
		t.Fatal("no promotion landed: the load proves nothing")
	}
}

// runChildren runs procs copies of this test binary as children in mode
// (TestMain's dispatch), child p with the environment env(p), and returns
// every line they printed after "ready". A child that fails or dies fails
// the test; one still running at deadline is killed and named hung.
func runChildren(t *testing.T, mode string, procs int, deadline time.Time, env func(p int) []string) []string {
	t.Helper()
	var mu sync.Mutex
	var lines []string
	var wg sync.WaitGroup
	for p := 0; p < procs; p++ {
		cmd, sc := startChild(t, mode, env(p)...)
		var hung atomic.Bool
		watchdog := time.AfterFunc(time.Until(deadline), func() {
			hung.Store(true)
			cmd.Process.Kill()
		})
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []string
			for sc.Scan() {
				mine = append(mine, sc.Text())
			}
			err := cmd.Wait()
			watchdog.Stop()
			switch {
			case hung.Load():
				t.Errorf("%s process %d hung: killed at the deadline, %d lines printed", mode, p, len(mine))
			case err != nil:
				t.Errorf("%s process %d crashed or failed: %v", mode, p, err)
			}
			mu.Lock()
			lines = append(lines, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return lines
}

type loadAck struct {
	marker string
	bytes  int64
}

type loadReport struct {
	acked                    map[string]map[uint64]loadAck
	resolve, promote, locked []time.Duration
	promoted, failed         int
	superseded               int
	dumps, reaps, reaped     int
	causes                   map[string]int // promote-failed causes
}

func summarize(t *testing.T, lines []string) loadReport {
	r := loadReport{acked: map[string]map[uint64]loadAck{}}
	for _, l := range lines {
		f := strings.Fields(l)
		d := func(i int) time.Duration { n, _ := strconv.ParseInt(f[i], 10, 64); return time.Duration(n) }
		switch f[0] {
		case "job": // job root key resolveNs promoteNs reason gen marker bytes
			r.resolve = append(r.resolve, d(3))
			r.promote = append(r.promote, d(4))
			switch gates.Reason(f[5]) {
			case gates.Promoted:
				r.promoted++
				if f[1] == "hot" {
					gen, _ := strconv.ParseUint(f[6], 10, 64)
					n, _ := strconv.ParseInt(f[8], 10, 64)
					if r.acked[f[2]] == nil {
						r.acked[f[2]] = map[uint64]loadAck{}
					}
					if prev, dup := r.acked[f[2]][gen]; dup {
						t.Errorf("key %s gen %d acknowledged twice: %s and %s", f[2], gen, prev.marker, f[7])
					}
					r.acked[f[2]][gen] = loadAck{f[7], n}
				}
			case gates.Superseded:
				r.superseded++ // another job promoted onto this one's base first
			case gates.Locked:
				r.locked = append(r.locked, d(4))
			case gates.PromoteFailed:
				if f[1] == "hot" {
					t.Errorf("promote-failed on the hot root, where nothing reaps: %s", l)
				}
				r.failed++
			default:
				t.Errorf("unexpected promote outcome: %s", l)
			}
		case "cause":
			if r.causes == nil {
				r.causes = map[string]int{}
			}
			r.causes[strings.Join(f[1:], " ")]++
		case "dump":
			r.dumps++
		case "reap":
			r.reaps++
			n, _ := strconv.Atoi(f[1])
			r.reaped += n
		case "error":
			t.Errorf("load worker: %s", l)
		}
	}
	return r
}

// runLoadChild is the child side of TestLoad.
func runLoadChild() int {
	hot, wide := os.Getenv("SESSDB_HOT"), os.Getenv("SESSDB_WIDE")
	n, _ := strconv.ParseInt(os.Getenv("SESSDB_UNTIL"), 10, 64)
	until := time.Unix(0, n)
	seed, _ := strconv.ParseInt(os.Getenv("SESSDB_SEED"), 10, 64)
	hs, _ := New(hot, Options{LockTimeout: 2 * time.Second})
	ws, _ := New(wide, Options{LockTimeout: 2 * time.Second})
	reaper, _ := New(wide, Options{LockTimeout: 2 * time.Second, Bounds: gates.Bounds{TTL: time.Nanosecond}})
	hotKeys, wideKeys := loadKeys("hot", 4), loadKeys("wide", 64)

	out := bufio.NewWriter(os.Stdout)
	fmt.Fprintln(out, "ready")
	out.Flush()
	var mu sync.Mutex
	emit := func(format string, args ...any) {
		mu.Lock()
		fmt.Fprintf(out, format+"\n", args...)
		mu.Unlock()
	}
	var wg sync.WaitGroup
	for g := 0; g < envInt("SESSDB_GOROUTINES", 3); g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(seed*1000 + int64(g)))
			for i := 0; time.Now().Before(until); i++ {
				switch x := rng.Intn(100); {
				case x < 50:
					loadJob(hs, "hot", hotKeys[rng.Intn(len(hotKeys))], fmt.Sprintf("p%d-g%d-%d", seed, g, i), emit)
				case x < 80:
					loadJob(ws, "wide", wideKeys[rng.Intn(len(wideKeys))], fmt.Sprintf("p%d-g%d-%d", seed, g, i), emit)
				case x < 90:
					if err := hs.Inspect(3, func(KeyReport) error { return nil }); err != nil && !os.IsNotExist(err) {
						emit("error dump %v", err)
					}
					emit("dump")
				default:
					res, err := reaper.Reap(false)
					if err != nil {
						emit("error reap %v", err)
					}
					emit("reap %d", len(res.Removed))
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

func loadJob(s *Store, root, key, marker string, emit func(string, ...any)) {
	jobDir, err := os.MkdirTemp("", "sessdb-load-")
	if err != nil {
		emit("error %v", err)
		return
	}
	defer os.RemoveAll(jobDir)
	start := time.Now()
	sess, err := s.Resolve(key, localJob(), jobDir)
	resolved := time.Since(start)
	if err != nil {
		emit("error resolve %v", err)
		return
	}
	p := filepath.Join(jobDir, StagedDirName, TranscriptName)
	data, _ := os.ReadFile(p)
	if len(data) == 0 {
		data = transcriptBytes(time.Now())
	}
	data = append(data, entryLine(marker)...)
	os.WriteFile(p, data, 0o600)
	start = time.Now()
	res, err := s.Promote(sess, PromoteRequest{PiVersion: testPi})
	promoted := time.Since(start)
	if err != nil && res.Reason != gates.PromoteFailed {
		emit("error promote %v", err)
		return
	}
	emit("job %s %s %d %d %s %d %s %d", root, key, resolved, promoted, res.Reason, res.Gen, marker, res.Bytes)
	if err != nil {
		// Name the cause without the paths, so the parent can count kinds.
		cause := err.Error()
		if i := strings.LastIndex(cause, ": "); i >= 0 {
			cause = cause[i+2:]
		}
		emit("cause %s", cause)
	}
}

func loadKeys(prefix string, n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = Key("github", "load/"+prefix, strconv.Itoa(i))
	}
	return keys
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// pct is the p-th percentile of ds (p=100 is the maximum).
func pct(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := (len(s)*p + 99) / 100
	if i > 0 {
		i--
	}
	return s[i]
}
