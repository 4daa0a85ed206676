package store

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/faults"
	"sessdb/internal/quietexit"
)

// The crash tests run promotions in a re-exec'd copy of this test binary
// (TestMain below dispatches on childEnv) and kill it, with SIGKILL, at a
// chosen protocol step or at random instants; the parent then checks the
// key from outside.

const childEnv = "SESSDB_STORE_TEST_CHILD"

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(runChild(mode))
	}
	quietexit.Children()    // a child that exits on its own does so without the race detector's second
	quietexit.Exit(m.Run()) // and a passing run ends without the race detector's second of its own
}

// TestMain has the children this package's tests start, and the
// processes those start in turn, exit without the race detector's sleep:
// GORACE in the tests' environment, which they inherit, sets
// atexit_sleep_ms (internal/quietexit).
func TestChildrenInheritNoExitSleep(t *testing.T) {
	if !strings.Contains(" "+os.Getenv("GORACE"), " atexit_sleep_ms=") {
		t.Fatalf("GORACE=%q: the children of a race build sleep 1 s as they exit", os.Getenv("GORACE"))
	}
}

// runChild is the child side. Modes:
//
//	promote-loop  promote forever, printing "acked <gen> <marker>" after each promoted
//	kill-at       promote once, SIGKILLing itself at the fault point in SESSDB_POINT
//	worker        resolve+promote until SESSDB_UNTIL, printing acks and resumes
func runChild(mode string) int {
	switch mode {
	case "load":
		return runLoadChild()
	case "chaos":
		return runChaosChild()
	case "reap-kill-at", "repair-kill-at":
		return runOpsChild(mode)
	}
	root, key := os.Getenv("SESSDB_ROOT"), os.Getenv("SESSDB_KEY")
	opts := Options{LockTimeout: 5 * time.Second}
	if mode == "kill-at" {
		point := faults.Point(os.Getenv("SESSDB_POINT"))
		faults.Set(func(p faults.Point) error {
			if p == point {
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {}
			}
			return nil
		})
	}
	s, err := New(root, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	out := bufio.NewWriter(os.Stdout)
	fmt.Fprintln(out, "ready")
	out.Flush()
	switch mode {
	case "kill-at":
		if _, _, _, err := childJob(s, key, os.Getenv("SESSDB_MARKER")); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return 0
	case "promote-loop", "worker":
		until := time.Now().Add(time.Hour)
		if u := os.Getenv("SESSDB_UNTIL"); u != "" {
			n, _ := strconv.ParseInt(u, 10, 64)
			until = time.Unix(0, n)
		}
		for i := 0; time.Now().Before(until); i++ {
			marker := fmt.Sprintf("m-%d-%d", os.Getpid(), i)
			sess, res, handed, err := childJob(s, key, marker)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			if sess.Resume {
				fmt.Fprintf(out, "resumed %d %s\n", sess.Gen(), handed)
			}
			if res.Promoted {
				fmt.Fprintf(out, "acked %d %s\n", res.Gen, marker)
			} else {
				fmt.Fprintf(out, "refused %s\n", res.Reason)
			}
			out.Flush()
		}
		return 0
	}
	return 2
}

// childJob is one job: resolve, append a marker line, promote. handed is
// the last marker of the transcript the job was handed ("" when cold).
func childJob(s *Store, key, marker string) (sess Session, res PromoteResult, handed string, err error) {
	jobDir, err := os.MkdirTemp("", "sessdb-job-")
	if err != nil {
		return sess, res, "", err
	}
	defer os.RemoveAll(jobDir)
	if sess, err = s.Resolve(key, localJob(), jobDir); err != nil {
		return sess, res, "", err
	}
	p := filepath.Join(jobDir, StagedDirName, TranscriptName)
	data, err := os.ReadFile(p)
	if err != nil {
		return sess, res, "", err
	}
	if len(data) == 0 {
		data = transcriptBytes(time.Now())
	} else {
		handed = markerOf(data, 1)
	}
	data = append(data, entryLine(marker)...)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		return sess, res, handed, err
	}
	res, err = s.Promote(sess, PromoteRequest{PiVersion: testPi})
	return sess, res, handed, err
}

// markerOf returns the marker of the n-th last entry line of a transcript.
func markerOf(data []byte, n int) string {
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) < n+1 {
		return ""
	}
	return entryText(lines[len(lines)-n])
}

func entryText(line []byte) string {
	i := bytes.Index(line, []byte(`"content":"`))
	if i < 0 {
		return ""
	}
	rest := line[i+len(`"content":"`):]
	if j := bytes.IndexByte(rest, '"'); j >= 0 {
		return string(rest[:j])
	}
	return ""
}

func startChild(t *testing.T, mode string, env ...string) (*exec.Cmd, *bufio.Scanner) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	// A child killed by design never removes its temp dirs (job dirs):
	// they go under this test's, which is removed.
	cmd.Env = append(os.Environ(), append([]string{childEnv + "=" + mode, "TMPDIR=" + t.TempDir()}, env...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	if !sc.Scan() || sc.Text() != "ready" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child %s did not start: %q", mode, sc.Text())
	}
	return cmd, sc
}

type ack struct {
	gen    uint64
	marker string
}

// checkDescribed resolves key and, when it resumes, proves from outside
// that the staged bytes are exactly what the db's record describes. It
// returns the verdict and the staged bytes.
func checkDescribed(t *testing.T, s *Store, root, key string) (Session, []byte) {
	t.Helper()
	sess, jobDir := mustResolve(t, s, key, localJob())
	data := staged(t, jobDir)
	if sess.Resume {
		rec := sidecarsOf(t, root, key).Transcript
		if rec == nil || rec.Size != int64(len(data)) || rec.CRC32C != uint64(crc32.Checksum(data, castagnoli)) || rec.Gen != sess.Gen() {
			t.Fatalf("resumed %d bytes (gen %d) that the record %+v does not describe", len(data), sess.Gen(), rec)
		}
		if !bytes.HasSuffix(data, []byte("\n")) {
			t.Fatal("resumed a transcript with a torn last line")
		}
	}
	return sess, data
}

func TestPromoteFaultPointsErrorReturn(t *testing.T) {
	for _, p := range []faults.Point{faults.PromoteAfterTempWrite, faults.PromoteAfterTempSync, faults.PromoteAfterCommit, faults.PromoteAfterRename, faults.PromoteAfterDirSync} {
		t.Run(string(p), func(t *testing.T) {
			s, root, _ := newTestStore(t, gates.Bounds{})
			runJob(t, s, testKey, localJob(), PromoteRequest{}, "before")
			sess, jobDir := mustResolve(t, s, testKey, localJob())
			stage(t, jobDir, append(staged(t, jobDir), entryLine("after")...))
			faults.Set(func(q faults.Point) error {
				if q == p {
					return errors.New("injected")
				}
				return nil
			})
			res, err := s.Promote(sess, PromoteRequest{PiVersion: testPi})
			faults.Set(nil)
			landed := p == faults.PromoteAfterDirSync
			if landed != res.Promoted || (!landed && (err == nil || res.Reason != gates.PromoteFailed)) {
				t.Fatalf("promote with a fault %s = %+v, %v", p, res, err)
			}
			checkFaultOutcome(t, s, root, p)
		})
	}
}

func TestPromoteKilledAtEachFaultPoint(t *testing.T) {
	for _, p := range []faults.Point{faults.PromoteAfterTempWrite, faults.PromoteAfterTempSync, faults.PromoteAfterCommit, faults.PromoteAfterRename, faults.PromoteAfterDirSync} {
		t.Run(string(p), func(t *testing.T) {
			s, root, _ := newTestStore(t, gates.Bounds{})
			runJob(t, s, testKey, localJob(), PromoteRequest{}, "before")
			cmd, _ := startChild(t, "kill-at", "SESSDB_ROOT="+root, "SESSDB_KEY="+testKey, "SESSDB_POINT="+string(p), "SESSDB_MARKER=after")
			err := cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("child was not killed at %s: %v", p, err)
			}
			checkFaultOutcome(t, s, root, p)
		})
	}
}

// checkFaultOutcome checks a key after a promotion of "after" over
// "before" stopped at p: wholly before or wholly after, and after once the
// next writer rolls forward whenever the commit happened.
func checkFaultOutcome(t *testing.T, s *Store, root string, p faults.Point) {
	t.Helper()
	committed := p != faults.PromoteAfterTempWrite && p != faults.PromoteAfterTempSync
	sess, data := checkDescribed(t, s, root, testKey)
	switch {
	case !committed:
		want(t, sess, true, gates.Resumed)
		if got := markerOf(data, 1); got != "before" {
			t.Fatalf("before the commit the key resumes %q, want before", got)
		}
	default:
		// Committed, renamed or not: a reader that comes before any writer
		// resumes exactly what was committed (from the temp, when the
		// rename did not happen; issue 15, item 8).
		want(t, sess, true, gates.Resumed)
		if got := markerOf(data, 1); got != "after" {
			t.Fatalf("after the commit the key resumes %q, want after", got)
		}
	}
	if _, err := s.RollForward(testKey); err != nil {
		t.Fatal(err)
	}
	sess, data = checkDescribed(t, s, root, testKey)
	want(t, sess, true, gates.Resumed)
	wantMarker := "before"
	if committed {
		wantMarker = "after"
	}
	if got := markerOf(data, 1); got != wantMarker {
		t.Fatalf("after roll-forward the key resumes %q, want %q", got, wantMarker)
	}
	if sc := sidecarsOf(t, root, testKey); inFlight(t, root, testKey, sc.Pending) {
		t.Fatalf("a promotion still in flight after roll-forward: %+v", sc.Pending)
	}
	assertNoTemps(t, root, testKey)
}

func assertNoTemps(t *testing.T, root, key string) {
	t.Helper()
	names, _ := filepath.Glob(filepath.Join(root, key, tmpPrefix+"*"))
	if len(names) > 0 {
		t.Fatalf("temps left: %v", names)
	}
}

// TestPromoteSurvivesRandomKills SIGKILLs a child that promotes in a loop
// at random instants. After every kill the key must resume only what its
// record describes, and no promotion the child saw acknowledged may be
// lost. SESSDB_CRASH_SEED and SESSDB_CRASH_ROUNDS override the defaults.
func TestPromoteSurvivesRandomKills(t *testing.T) { promoteUnderRandomKills(t, false) }

// The same, with the key's meta.db given a second name outside the root
// before each round, as a cp -al backup gives it: the child's first
// writer copies meta.db and renames the copy over it (db's ownFile), at
// whatever moment the kill comes. No kill loses an acknowledged
// promotion, and no commit ever goes through the other name.
func TestPromoteSurvivesRandomKillsOfAHardLinkedMetaDB(t *testing.T) {
	promoteUnderRandomKills(t, true)
}

func promoteUnderRandomKills(t *testing.T, hardLinked bool) {
	rounds := 200
	if n, err := strconv.Atoi(os.Getenv("SESSDB_CRASH_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	seed := time.Now().UnixNano()
	if n, err := strconv.ParseInt(os.Getenv("SESSDB_CRASH_SEED"), 10, 64); err == nil {
		seed = n
	}
	t.Logf("seed %d (set SESSDB_CRASH_SEED to replay), %d rounds", seed, rounds)
	rng := rand.New(rand.NewSource(seed))
	s, root, _ := newTestStore(t, gates.Bounds{})
	var last ack
	var acked, pendingSeen, copied int
	backups := t.TempDir()
	type backup struct {
		path string
		sum  [sha256.Size]byte
	}
	var linked []backup
	metaPath := filepath.Join(root, testKey, db.FileName)
	// Each kill comes within window of the child's start: 20 ms, so that
	// kills land at every step of a promotion. It doubles every 10 rounds
	// while none was acknowledged (to 1 s at most): in a CI run beside
	// migrate's kills, a promotion took longer, and 200 rounds of 200
	// came too early.
	window := 20 * time.Millisecond
	for r := 0; r < rounds; r++ {
		if acked == 0 && r > 0 && r%10 == 0 && window < time.Second {
			window *= 2
		}
		var was unix.Stat_t
		if err := unix.Lstat(metaPath, &was); hardLinked && err == nil {
			b := backup{path: filepath.Join(backups, strconv.Itoa(r))}
			if err := os.Link(metaPath, b.path); err != nil {
				t.Fatal(err)
			}
			b.sum = sha256.Sum256(mustRead(t, b.path))
			linked = append(linked, b)
		}
		cmd, sc := startChild(t, "promote-loop", "SESSDB_ROOT="+root, "SESSDB_KEY="+testKey)
		lines := make(chan string, 1024)
		go func() {
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		time.Sleep(time.Duration(rng.Int63n(int64(window))))
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		for l := range lines {
			f := strings.Fields(l)
			if len(f) == 3 && f[0] == "acked" {
				g, _ := strconv.ParseUint(f[1], 10, 64)
				last = ack{g, f[2]}
				acked++
			}
		}
		if len(linked) > 0 {
			var now unix.Stat_t
			if err := unix.Lstat(metaPath, &now); err == nil && now.Ino != was.Ino {
				copied++
			}
		}
		if last.gen == 0 {
			continue
		}
		// A kill between a commit and its rename leaves a promotion in
		// flight; a reader must still resume what was committed.
		if sc := sidecarsOf(t, root, testKey); inFlight(t, root, testKey, sc.Pending) {
			pendingSeen++
		}
		sess, _ := checkDescribed(t, s, root, testKey)
		if !sess.Resume {
			t.Fatalf("round %d: cold start %s after a kill", r, sess.Reason)
		}
		// Every other round the parent rolls forward; otherwise the next
		// child's promotion must do it.
		if r%2 == 0 {
			if _, err := s.RollForward(testKey); err != nil {
				t.Fatal(err)
			}
			sess, data := checkDescribed(t, s, root, testKey)
			want(t, sess, true, gates.Resumed)
			if sess.Gen() < last.gen {
				t.Fatalf("round %d: acknowledged gen %d lost: the key is at gen %d", r, last.gen, sess.Gen())
			}
			if sess.Gen() == last.gen && markerOf(data, 1) != last.marker {
				t.Fatalf("round %d: gen %d holds %q, acknowledged as %q", r, last.gen, markerOf(data, 1), last.marker)
			}
		}
	}
	t.Logf("%d rounds, %d promotions acknowledged, %d kills left a promotion in flight (resumed from its temp)", rounds, acked, pendingSeen)
	if acked == 0 {
		t.Fatal("no promotion was ever acknowledged: the kills came too early to test anything")
	}
	if !hardLinked {
		return
	}
	for _, b := range linked {
		if sha256.Sum256(mustRead(t, b.path)) != b.sum {
			t.Fatalf("%s, a second name of meta.db, changed: a commit went through it", b.path)
		}
	}
	t.Logf("meta.db given a second name in %d rounds, copied in %d", len(linked), copied)
	if copied == 0 {
		t.Fatal("meta.db was never copied: the kills came too early to test the copy")
	}
}

// A job killed at any step of its promotion is retried with the same
// ticket (issue 11): before the commit the retry promotes, after it the
// retry repeats the committed promotion; either way the key ends at one
// generation more than before, holding the job's turn, with a chain
// counted once.
func TestKilledPromoteRetriedWithTheSameTicket(t *testing.T) {
	for _, p := range []faults.Point{faults.PromoteAfterTempWrite, faults.PromoteAfterTempSync, faults.PromoteAfterCommit, faults.PromoteAfterRename, faults.PromoteAfterDirSync} {
		t.Run(string(p), func(t *testing.T) {
			s, root, _ := newTestStore(t, gates.Bounds{})
			runJob(t, s, testKey, localJob(), PromoteRequest{}, "before")
			sess, _ := killedPromote(t, root, p, "after")
			res := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi})
			committed := p != faults.PromoteAfterTempWrite && p != faults.PromoteAfterTempSync
			if !res.Promoted || res.Gen != 2 || res.Repeat != committed {
				t.Fatalf("retry after a kill at %s = %+v, want gen 2, repeat %v", p, res, committed)
			}
			got, data := checkDescribed(t, s, root, testKey)
			if !got.Resume || got.Gen() != 2 || markerOf(data, 1) != "after" {
				t.Fatalf("after the retry: %+v holding %q", got, markerOf(data, 1))
			}
			if sc := sidecarsOf(t, root, testKey); *sc.ResumeChain != 1 {
				t.Fatalf("chain %d after one delivery", *sc.ResumeChain)
			}
		})
	}
}

// killedPromote runs a job on root's testKey in a child process killed at
// p in its promote, the job's run ending in marker, and returns the job's
// ticket and its dir, which the child left.
func killedPromote(t *testing.T, root string, p faults.Point, marker string) (Session, string) {
	t.Helper()
	tmp := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=kill-at", "TMPDIR="+tmp, "SESSDB_ROOT="+root, "SESSDB_KEY="+testKey, "SESSDB_POINT="+string(p), "SESSDB_MARKER="+marker)
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err == nil {
		t.Fatal("the child was not killed")
	}
	jobs, _ := filepath.Glob(filepath.Join(tmp, "sessdb-job-*"))
	if len(jobs) != 1 {
		t.Fatalf("%d job dirs left by the killed child", len(jobs))
	}
	sess, err := ReadTicket(jobs[0])
	if err != nil {
		t.Fatal(err)
	}
	return sess, jobs[0]
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
