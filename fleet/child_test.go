package fleet

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sessdb/fleet/etcdmeta"
	"sessdb/store"
)

// The environment a child reads.
const (
	envEndpoints  = "SESSDB_FLEET_ENDPOINTS"
	envPrefix     = "SESSDB_FLEET_PREFIX"
	envDir        = "SESSDB_FLEET_DIR"
	envKeys       = "SESSDB_FLEET_KEYS"
	envGoroutines = "SESSDB_FLEET_GOROUTINES"
	envSeed       = "SESSDB_FLEET_SEED"
)

// runChild is the child side of the multi-process fault tests. Modes:
//
//	worker     jobs (resolve, append a marker, promote) on SESSDB_FLEET_KEYS until
//	           the instant (Unix nanoseconds) on stdin's first line, one line
//	           per job on stdout (see workerJob)
//	reap-hold  a reap that stops with the key's lock held, says "holding", and
//	           goes on when a line comes on stdin; then "reaped <removed> <skipped>"
//	to-etcd    a migration (see runMigrateChild)
//	from-etcd
func runChild(mode string) int {
	b, err := Open(Config{
		Config: etcdmeta.Config{
			Endpoints: strings.Split(os.Getenv(envEndpoints), ","), Prefix: os.Getenv(envPrefix),
			RequestTimeout: 2 * time.Second, LockTTL: time.Second, LockWait: 5 * time.Second,
		},
		TranscriptsDir: os.Getenv(envDir),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer b.Close()
	out := &lines{w: bufio.NewWriter(os.Stdout)}
	out.emit("ready")
	switch mode {
	case "worker":
		return runWorker(b, out)
	case "reap-hold":
		in := bufio.NewScanner(os.Stdin)
		b.hook = func(p, _ string) error {
			if p == hookReapDelete {
				out.emit("holding")
				in.Scan()
			}
			return nil
		}
		res, err := b.Reap(context.Background(), ReapOptions{TTL: 14 * 24 * time.Hour})
		if err != nil {
			out.emit("error %v", err)
		}
		out.emit("reaped %d %d %v", len(res.Removed), len(res.Skipped), res.Skipped)
		return 0
	case "to-etcd", "from-etcd":
		return runMigrateChild(b, mode, out)
	}
	fmt.Fprintf(os.Stderr, "unknown child mode %q\n", mode)
	return 2
}

// lines writes whole lines from many goroutines.
type lines struct {
	mu sync.Mutex
	w  *bufio.Writer
}

func (l *lines) emit(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, format+"\n", args...)
	l.w.Flush()
}

func runWorker(b *Backend, out *lines) int {
	s := store.NewOn(b, store.Options{})
	keys := strings.Split(os.Getenv(envKeys), ",")
	// The instant comes once every worker is ready: starved, starting
	// the three took more than the run's 7 s, and the run injected no
	// fault.
	in := bufio.NewScanner(os.Stdin)
	in.Scan()
	n, err := strconv.ParseInt(in.Text(), 10, 64)
	if err != nil {
		fmt.Fprintf(os.Stderr, "worker: until: %v\n", err)
		return 2
	}
	until := time.Unix(0, n)
	seed, _ := strconv.Atoi(os.Getenv(envSeed))
	goroutines, _ := strconv.Atoi(os.Getenv(envGoroutines))
	// Past until, the faults over, jobs go on until this process has
	// promoted once, for overtime at most: starved, a run's 7 s promoted
	// nothing (every job met a fault), and the test proved nothing.
	const overtime = time.Minute
	var promoted atomic.Bool
	more := func() bool {
		now := time.Now()
		return now.Before(until) || !promoted.Load() && now.Before(until.Add(overtime))
	}
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			rng := rand.New(rand.NewSource(int64(seed*100 + g)))
			for i := 0; more(); i++ {
				if workerJob(s, keys[rng.Intn(len(keys))], fmt.Sprintf("p%d-g%d-%d", seed, g, i), out) {
					promoted.Store(true)
				}
			}
		})
	}
	wg.Wait()
	out.emit("landed-late %d", b.landedLate.Load())
	return 0
}

// workerJob is one job. It prints
//
//	job <key> <resolve-reason> <base-gen> <promote-reason> <gen> <repeat> <ticket> <marker> <resolve-ns> <promote-ns>
//	handed <key> <gen> <last marker>    when it resumed
//	torn <key> <gen> <why>              when what it resumed is not whole lines of JSON
//	cause <key> <marker> <error>        when the promote failed
//	error <text>                        for a fault of the resolve
//
// and reports whether its job was promoted.
func workerJob(s *store.Store, key, marker string, out *lines) bool {
	jobDir, err := os.MkdirTemp("", "fleet-job-")
	if err != nil {
		out.emit("error %v", err)
		return false
	}
	defer os.RemoveAll(jobDir)
	t0 := time.Now()
	sess, err := s.Resolve(key, testJob, jobDir)
	resolved := time.Since(t0)
	if err != nil {
		out.emit("error resolve %v", oneLine(err))
		return false
	}
	p := filepath.Join(jobDir, store.StagedDirName, store.TranscriptName)
	data, err := os.ReadFile(p)
	if err != nil {
		out.emit("error %v", err)
		return false
	}
	if sess.Resume {
		if why := torn(data); why != "" {
			out.emit("torn %s %d %s", key, sess.Gen(), why)
		}
		m := markers(data)
		out.emit("handed %s %d %s", key, sess.Gen(), m[len(m)-1])
	} else {
		data = []byte(testHeader)
	}
	os.WriteFile(p, append(data, markerLine(marker)...), 0o600)
	t0 = time.Now()
	res, err := s.Promote(sess, store.PromoteRequest{PiVersion: testJob.PiVersion})
	promoted := time.Since(t0)
	out.emit("job %s %s %d %s %d %v %s %s %d %d", key, sess.Reason, sess.Base.Gen, res.Reason, res.Gen, res.Repeat, sess.Ticket, marker, resolved, promoted)
	if err != nil {
		out.emit("cause %s %s %s", key, marker, oneLine(err))
	}
	return res.Promoted
}

// torn says why data is not whole lines of JSON, or "".
func torn(data []byte) string {
	if len(data) == 0 || data[len(data)-1] != '\n' {
		return "no-final-newline"
	}
	for i, l := range bytes.Split(data[:len(data)-1], []byte("\n")) {
		if !json.Valid(l) {
			return fmt.Sprintf("line-%d-not-json", i+1)
		}
	}
	return ""
}

func oneLine(err error) string { return strings.ReplaceAll(err.Error(), "\n", " ") }

// child is a running child process and its output lines.
type child struct {
	cmd   *exec.Cmd
	lines chan string
	stdin *os.File
}

// startChild re-execs the test binary in mode with env, and waits for its
// "ready".
func startChild(t *testing.T, mode string, env ...string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{childEnv + "=" + mode, "TMPDIR=" + t.TempDir()}, env...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdin = r
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.Close()
	c := &child{cmd: cmd, lines: make(chan string, 1<<16), stdin: w}
	t.Cleanup(func() { w.Close(); cmd.Process.Kill(); cmd.Wait() })
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
	}()
	if l, ok := c.next(30 * time.Second); !ok || l != "ready" {
		t.Fatalf("child %s did not start: %q", mode, l)
	}
	return c
}

// next returns the child's next line, or false when it ended or wait
// passed.
func (c *child) next(wait time.Duration) (string, bool) {
	select {
	case l, ok := <-c.lines:
		return l, ok
	case <-time.After(wait):
		return "", false
	}
}
