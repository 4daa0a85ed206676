package store

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"sessdb/gates"
)

// TestConcurrentJobsOnOneKey runs eight goroutines in this process and two
// child processes, each resolving, appending a unique marker and promoting
// one key in a loop for a few seconds (SESSDB_LOAD_SECONDS overrides). No
// acknowledged promotion may be lost or shared, and every resume must hand
// over exactly the transcript its generation was acknowledged with.
func TestConcurrentJobsOnOneKey(t *testing.T) {
	if testing.Short() {
		t.Skip("load test; runs without -short")
	}
	secs := 3
	if n, err := strconv.Atoi(os.Getenv("SESSDB_LOAD_SECONDS")); err == nil && n > 0 {
		secs = n
	}
	s, root, _ := newTestStore(t, gates.Bounds{})
	s.opts.Now = time.Now
	until := time.Now().Add(time.Duration(secs) * time.Second)

	var mu sync.Mutex
	acked := map[uint64]string{}
	type resume struct {
		gen    uint64
		handed string
	}
	var resumes []resume
	var refused []string
	record := func(line string) {
		f := strings.Fields(line)
		mu.Lock()
		defer mu.Unlock()
		switch {
		case len(f) == 3 && f[0] == "acked":
			g, _ := strconv.ParseUint(f[1], 10, 64)
			if prev, dup := acked[g]; dup {
				t.Errorf("gen %d acknowledged twice: %s and %s", g, prev, f[2])
			}
			acked[g] = f[2]
		case len(f) >= 2 && f[0] == "resumed":
			g, _ := strconv.ParseUint(f[1], 10, 64)
			resumes = append(resumes, resume{g, strings.Join(f[2:], " ")})
		case len(f) == 2 && f[0] == "refused":
			refused = append(refused, f[1])
		}
	}

	var wg sync.WaitGroup
	for p := 0; p < 2; p++ {
		cmd, sc := startChild(t, "worker", "SESSDB_ROOT="+root, "SESSDB_KEY="+testKey, fmt.Sprintf("SESSDB_UNTIL=%d", until.UnixNano()))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for sc.Scan() {
				record(sc.Text())
			}
			if err := cmd.Wait(); err != nil {
				t.Errorf("worker process: %v", err)
			}
		}()
	}
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; time.Now().Before(until); i++ {
				marker := fmt.Sprintf("g%d-%d", g, i)
				sess, res, handed, err := childJob(s, testKey, marker)
				if err != nil {
					t.Errorf("job %s: %v", marker, err)
					return
				}
				if sess.Resume {
					record(fmt.Sprintf("resumed %d %s", sess.Gen(), handed))
				}
				if res.Promoted {
					record(fmt.Sprintf("acked %d %s", res.Gen, marker))
				} else {
					record("refused " + string(res.Reason))
				}
			}
		}(g)
	}
	wg.Wait()

	for _, r := range resumes {
		m, ok := acked[r.gen]
		if !ok {
			t.Errorf("resumed gen %d, which no promotion acknowledged", r.gen)
		} else if m != r.handed {
			t.Errorf("gen %d resumed with %q, acknowledged with %q", r.gen, r.handed, m)
		}
	}
	var max uint64
	for g := range acked {
		max = max2(max, g)
	}
	sess, data := checkDescribed(t, s, root, testKey)
	want(t, sess, true, gates.Resumed)
	if sess.Gen() != max || markerOf(data, 1) != acked[max] {
		t.Errorf("final key is gen %d %q, last acknowledged gen %d %q", sess.Gen(), markerOf(data, 1), max, acked[max])
	}
	// Jobs on one key race: one that resolved before another's promotion
	// landed is superseded (the job contract), or its promote waited past
	// the lock timeout (locked). Nothing else refuses them.
	counts := map[string]int{}
	for _, r := range refused {
		counts[r]++
		if r != string(gates.Locked) && r != string(gates.Superseded) {
			t.Errorf("promotion refused with %s", r)
		}
	}
	// And nothing acknowledged is lost: each promotion was made onto the
	// one before it, so the final transcript holds every acknowledged
	// marker, in the order of their generations.
	rest := string(data)
	for g := uint64(1); g <= max; g++ {
		m, ok := acked[g]
		if !ok {
			t.Errorf("gen %d was never acknowledged, yet gen %d was", g, max)
			continue
		}
		i := strings.Index(rest, `"content":"`+m+`"`)
		if i < 0 {
			t.Errorf("acknowledged gen %d (%s) is lost from the final transcript", g, m)
			break
		}
		rest = rest[i:]
	}
	t.Logf("%ds: %d promotions acknowledged, %d resumes, %d refused (%d superseded, %d locked)", secs, len(acked), len(resumes), len(refused), counts[string(gates.Superseded)], counts[string(gates.Locked)])
	if len(acked) < 10 {
		t.Errorf("only %d promotions in %ds: the test proves little", len(acked), secs)
	}
}

func max2(a, b uint64) uint64 {
	if a > b {
		return a
	}
	return b
}
