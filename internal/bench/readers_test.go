package bench

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sessdb/store"
)

// BenchmarkPromoteUnderReaders is BenchmarkPromote's steady-state
// promotion (64 KiB, sessdb) of one key while other resolves of that same
// key run without pause: none, 8 in this process (goroutines, which meet
// the writer in the in-process lock first, where a waiting writer holds
// new readers back), and 8 other processes (the CLI's case: each resolve
// is a process of its own, and between processes only flock orders them,
// which has no such preference). A promotion that waits past the lock
// timeout (2 s) fails the benchmark as locked. It reports, beside the
// mean, the slowest promotion (max-ms) and the resolves the readers made
// per promotion (resolves/op).
func BenchmarkPromoteUnderReaders(b *testing.B) {
	data := Transcript(64 << 10)
	for _, c := range []struct {
		name    string
		readers int
		procs   bool
	}{{"readers=0", 0, false}, {"readers=8/goroutines", 8, false}, {"readers=8/processes", 8, true}} {
		b.Run(c.name, func(b *testing.B) {
			root := filepath.Join(workDir(b), "sessions")
			s := newStore(b, root)
			key := benchKey(1)
			promoteN(b, s, key, data, 70)
			sess, err := s.Resolve(key, job, workDir(b))
			if err != nil || !sess.Resume {
				b.Fatalf("resolve: %v %+v", err, sess)
			}
			stop := startReaders(b, s, root, key, c.readers, c.procs)
			req := store.PromoteRequest{PiVersion: piVersion, Tokens: &readingTokens, Window: readingWindow}
			runs := alternateRuns(b, sess, data)
			b.SetBytes(int64(len(data)))
			var slowest time.Duration
			n := 0
			for b.Loop() {
				n++
				t0 := time.Now()
				res, err := runs.promote(s, n, req)
				slowest = max(slowest, time.Since(t0))
				if err != nil || !res.Promoted || res.Repeat {
					b.Fatalf("promote %d: %v %+v", n, err, res)
				}
			}
			reads := stop()
			b.ReportMetric(float64(slowest)/float64(time.Millisecond), "max-ms")
			b.ReportMetric(float64(reads)/float64(n), "resolves/op")
		})
	}
}

// startReaders starts n loops of resolves of key, each into a job dir of
// its own, as goroutines of s or as processes on root, and returns a stop
// that ends them and says how many resolves they made. A resolve that
// fails, or that is neither resumed nor locked out, fails the benchmark.
func startReaders(b *testing.B, s *store.Store, root, key string, n int, procs bool) (stop func() int64) {
	b.Helper()
	if n == 0 {
		return func() int64 { return 0 }
	}
	if procs {
		return startReaderProcs(b, root, key, n)
	}
	var done atomic.Bool
	var reads atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		jobDir := workDir(b)
		wg.Go(func() {
			for !done.Load() {
				sess, err := s.Resolve(key, job, jobDir)
				if err == nil && !sess.Resume && sess.Reason != "locked" {
					err = fmt.Errorf("resolve under promotions: %s", sess.Reason)
				}
				if err != nil {
					errs <- err
					return
				}
				reads.Add(1)
			}
		})
	}
	return func() int64 {
		done.Store(true)
		wg.Wait()
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
		return reads.Load()
	}
}

const (
	readerRootEnv = "SESSDB_BENCH_READER_ROOT"
	readerKeyEnv  = "SESSDB_BENCH_READER_KEY"
)

// startReaderProcs is startReaders with each loop in a process of its
// own: this test binary, running TestResolveLoopChild.
func startReaderProcs(b *testing.B, root, key string, n int) func() int64 {
	type child struct {
		cmd   *exec.Cmd
		stdin io.WriteCloser
		out   *bufio.Reader
	}
	var kids []child
	for i := 0; i < n; i++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestResolveLoopChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), readerRootEnv+"="+root, readerKeyEnv+"="+key)
		cmd.Stderr = os.Stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			b.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			b.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		k := child{cmd, stdin, bufio.NewReader(stdout)}
		kids = append(kids, k)
		if line, err := readPrefixed(k.out, "reading"); err != nil {
			b.Fatalf("reader %d did not start: %v %q", i, err, line)
		}
	}
	return func() int64 {
		var total int64
		for i, k := range kids {
			k.stdin.Close()
			line, err := readPrefixed(k.out, "reads ")
			if err == nil {
				var c int64
				c, err = strconv.ParseInt(strings.TrimSpace(strings.TrimPrefix(line, "reads ")), 10, 64)
				total += c
			}
			if werr := k.cmd.Wait(); err == nil {
				err = werr
			}
			if err != nil {
				b.Fatalf("reader %d: %v", i, err)
			}
		}
		return total
	}
}

// readPrefixed reads lines until one starts with prefix (the test
// binary's own lines may come first).
func readPrefixed(r *bufio.Reader, prefix string) (string, error) {
	for {
		line, err := r.ReadString('\n')
		if strings.HasPrefix(line, prefix) || err != nil {
			return line, err
		}
	}
}

// TestResolveLoopChild is a reader process of BenchmarkPromoteUnderReaders:
// it resolves the key again and again, until its stdin closes, then
// prints how many times. Run by go test itself, it does nothing.
func TestResolveLoopChild(t *testing.T) {
	root, key := os.Getenv(readerRootEnv), os.Getenv(readerKeyEnv)
	if root == "" {
		return
	}
	s := newStore(t, root)
	jobDir := workDir(t)
	var done atomic.Bool
	go func() {
		io.Copy(io.Discard, os.Stdin)
		done.Store(true)
	}()
	fmt.Println("reading")
	var n int64
	for !done.Load() {
		sess, err := s.Resolve(key, job, jobDir)
		if err != nil {
			t.Fatal(err)
		}
		if !sess.Resume && sess.Reason != "locked" {
			t.Fatalf("resolve under promotions: %s", sess.Reason)
		}
		n++
	}
	fmt.Printf("reads %d\n", n)
}
