package bench

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"sessdb/gates"
	"sessdb/internal/quietexit"
	"sessdb/store"
)

// The sizes every promote and resolve benchmark runs at: a typical
// transcript, and the default PI_SESSION_MAX_BYTES, the largest one a key
// can hold.
var sizes = []struct {
	name  string
	bytes int
}{
	{"64KiB", 64 << 10},
	{"8MiB", 8 << 20},
}

const (
	piVersion = "0.58.3"
	venue     = "local"
	model     = "anthropic/claude-sonnet-4-5"
)

// bounds are the same for sessdb and the legacy baseline. The chain and
// context bounds are set (and never reached) so that both ladders read all
// four sidecars, as the legacy resolve does.
var bounds = gates.Bounds{
	// The default cap, and room for one more turn: the promotion
	// benchmarks' loops stage an 8 MiB transcript and, by turns, that
	// transcript grown by a line (see alternating).
	MaxBytes:       8<<20 + 4<<10,
	TTL:            14 * 24 * time.Hour,
	MaxResumeChain: 1 << 40,
	MaxContextPct:  100,
}

var (
	// readingTokens over readingWindow is the context each benchmark
	// promotion reports, as the runner's override of the transcript's own.
	readingTokens, readingWindow int64 = 12345, 200000
	job                                = store.Job{PiVersion: piVersion, Venue: venue, Model: model, ID: "bench"}
	// otherJob is refused at the pi-version rung: a cold verdict reached
	// after the sidecar reads, with nothing to copy.
	otherJob = store.Job{PiVersion: "0.0.1", Venue: venue, Model: model, ID: "bench"}
)

func benchKey(i int) string { return store.Key("github", "acme/widget", fmt.Sprintf("pi/issue-%d", i)) }

func newStore(tb testing.TB, root string) *store.Store {
	tb.Helper()
	s, err := store.New(root, store.Options{Bounds: bounds})
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// stageFile writes data as <jobDir>/session/current.jsonl, where a
// finished run leaves its transcript.
func stageFile(tb testing.TB, jobDir string, data []byte) string {
	tb.Helper()
	dir := filepath.Join(jobDir, store.StagedDirName)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		tb.Fatal(err)
	}
	p := filepath.Join(dir, store.TranscriptName)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		tb.Fatal(err)
	}
	return p
}

// promoteN promotes data into key n times, the first cold and the rest
// resumed, as a conversation grows its history. Each promotion carries a
// ticket as a job gets one: the first from a resolve of the empty key,
// the rest from one resolve of the key it made, each with its own ticket
// id (none a benchmark's own loop takes) and based on the generation the
// one before it made (a promotion without a real ticket is superseded, as
// a stale job's would be). Every promotion but the last is of data
// without its last line, and the last of data whole: the key ends as a
// growing conversation leaves it, its transcript longer than the
// generation before. (Two generations of one size are the rare case in
// which a reader must checksum the transcript in place to tell which of
// the two a crash left there; every resolve of such a key would pay it.)
func promoteN(tb testing.TB, s *store.Store, key string, data []byte, n int) {
	tb.Helper()
	req := store.PromoteRequest{PiVersion: piVersion, Tokens: &readingTokens, Window: readingWindow}
	shorter := data[:bytes.LastIndexByte(data[:len(data)-1], '\n')+1]
	var sess store.Session
	var jobDir string
	for i := 0; i < n; i++ {
		if i < 2 {
			jobDir = workDir(tb)
			var err error
			if sess, err = s.Resolve(key, job, jobDir); err != nil || sess.Resume != (i > 0) {
				tb.Fatalf("resolve %d: %v %+v", i, err, sess)
			}
			stageFile(tb, jobDir, shorter)
		}
		if i == n-1 {
			stageFile(tb, jobDir, data)
		}
		sess.Ticket = fmt.Sprintf("5e7a%028x", i+1) // not an id the benchmarks' own loops use
		res, err := s.Promote(sess, req)
		if err != nil || !res.Promoted {
			tb.Fatalf("promote %d: %v %s", i, err, res.Reason)
		}
		sess.Base.Gen = res.Gen
	}
}

// oneMoreTurn is a line a run appends to a transcript of Transcript's.
const oneMoreTurn = `{"type":"message","id":"ffffffff","parentId":null,"timestamp":"2026-11-01T12:00:01.000Z","message":{"role":"user","content":"one more turn"}}` + "\n"

// alternating is the two runs a promotion benchmark's loop promotes by
// turns: the job as its resolve delivered it, and the same job with one
// more turn staged. Each promotion's transcript then differs in size from
// the one before, as a growing conversation's does (two generations of
// one size make every reader checksum the transcript in place: see
// promoteN).
type alternating struct {
	runs [2]store.Session
	size [2]int64
	sum  [2]store.Checksum
	base store.Base // what the key holds: the last promotion's
}

// alternateRuns makes the runs from sess, the job's resolve of data.
func alternateRuns(tb testing.TB, sess store.Session, data []byte) *alternating {
	tb.Helper()
	longer := sess
	longer.JobDir = workDir(tb)
	grown := append(bytes.Clone(data), oneMoreTurn...)
	stageFile(tb, longer.JobDir, grown)
	castagnoli := crc32.MakeTable(crc32.Castagnoli)
	return &alternating{
		runs: [2]store.Session{sess, longer},
		size: [2]int64{int64(len(data)), int64(len(grown))},
		sum:  [2]store.Checksum{store.Checksum(crc32.Checksum(data, castagnoli)), store.Checksum(crc32.Checksum(grown, castagnoli))},
		base: sess.Base,
	}
}

// promote promotes the n-th run, with a ticket id of its own, onto what
// the one before left.
func (a *alternating) promote(s *store.Store, n int, req store.PromoteRequest) (store.PromoteResult, error) {
	run := a.runs[n%2]
	run.Ticket, run.Base = fmt.Sprintf("%032x", n), a.base
	res, err := s.Promote(run, req)
	if err == nil && res.Promoted {
		a.base = store.Base{Gen: res.Gen, Size: a.size[n%2], CRC32C: a.sum[n%2]}
	}
	return res, err
}

var legacySession = Session{Resume: true, Venue: venue, Model: model}

var legacyRequest = Request{PiVersion: piVersion, Context: &Reading{Tokens: readingTokens, Window: readingWindow}}

var legacyJob = Job{PiVersion: piVersion, Venue: venue, Model: model}

// legacyPromoteN is promoteN for a legacy key dir.
func legacyPromoteN(tb testing.TB, keyDir string, data []byte, n int, durable bool) {
	tb.Helper()
	staged := stageFile(tb, workDir(tb), data)
	for i := 0; i < n; i++ {
		sess := legacySession
		sess.Resume = i > 0
		res, err := legacyPromote(keyDir, staged, sess, legacyRequest, legacyOptions{Bounds: bounds, Durable: durable})
		if err != nil || !res.Promoted || len(res.SidecarErrors) > 0 {
			tb.Fatalf("legacy promote %d: %v %s %v", i, err, res.Reason, res.SidecarErrors)
		}
	}
}

// work is the root of every directory the benchmarks create. Nothing
// under it is deleted while benchmarks run: on an ext4 without a journal
// (this machine's), every inode deleted in the last minute or more is
// skipped, one by one, by every later inode allocation in its block group
// (recently_deleted in fs/ext4/ialloc.c). A benchmark that cleaned up after
// itself, as b.TempDir does, would make the creates of the next one slower
// by an amount that depends on the order the benchmarks ran in.
//
// The report program sets SESSDB_BENCH_DIR, and removes it once every round
// has run, so that the dump fixtures are built once and no round deletes
// what the next would pay for. Without it, work is a temporary directory
// that TestMain removes on the way out.
var work struct {
	root      string
	temporary bool
	seq       int
}

func TestMain(m *testing.M) {
	work.root = os.Getenv("SESSDB_BENCH_DIR")
	if work.root == "" {
		d, err := os.MkdirTemp("", "sessdb-bench-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		work.root, work.temporary = d, true
	}
	// Marked as the top of a directory hierarchy, the root makes ext4's
	// Orlov allocator spread its subdirectories over block groups, away
	// from each other's deleted inodes and from the churn other processes
	// make in the temp dir's own group. Elsewhere this does nothing.
	SetTopDir(work.root)
	code := m.Run()
	if work.temporary {
		os.RemoveAll(work.root)
	}
	quietexit.Exit(code) // a passing run ends without the race detector's second
}

// workDir returns a new directory directly under work.root, so that ext4
// gives it a block group of its own (see TestMain), away from the deletes
// of the benchmarks before it. It is not removed when the benchmark ends
// (see work).
func workDir(tb testing.TB) string {
	tb.Helper()
	work.seq++
	d := filepath.Join(work.root, fmt.Sprintf("%d-%d", os.Getpid(), work.seq))
	if err := os.MkdirAll(d, 0o700); err != nil {
		tb.Fatal(err)
	}
	return d
}

// fixtureDir is where the dump fixtures live, shared by every process that
// is given the same SESSDB_BENCH_DIR.
func fixtureDir(tb testing.TB) string {
	tb.Helper()
	return filepath.Join(work.root, "fixtures")
}

var fixtures sync.Map // name -> root, built once per process

// fixture returns the root of the fixture name under fixtureDir, building
// it with build (given the root, which does not exist yet) on first use. A
// fixture whose "complete" marker a previous process left is used as it
// is; one without it is rebuilt. The build runs with the timer stopped and
// is written back (one syncfs, not an fsync of every file) before the
// marker, so that a cold run can evict every page (the kernel keeps dirty
// ones) and no writeback of it lands in a measurement.
func fixture(b *testing.B, name string, build func(root string)) string {
	if r, ok := fixtures.Load(name); ok {
		return r.(string)
	}
	base := filepath.Join(fixtureDir(b), name)
	root := filepath.Join(base, "root")
	marker := filepath.Join(base, "complete")
	if _, err := os.Stat(marker); err != nil {
		b.StopTimer()
		start := time.Now()
		os.RemoveAll(base)
		if err := os.MkdirAll(base, 0o700); err != nil {
			b.Fatal(err)
		}
		build(root)
		if err := SyncFS(base); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(marker, nil, 0o600); err != nil {
			b.Fatal(err)
		}
		b.Logf("built the %s fixture in %v", name, time.Since(start).Round(time.Millisecond))
		b.StartTimer()
	}
	fixtures.Store(name, root)
	return root
}

// freshDirs hands out a new, empty directory on every call, as every job
// has a job dir of its own: a resolve that reused one would time the
// truncation of the previous copy (which on ext4 also triggers a flush at
// close) instead of the creation of a new file.
//
// With the timer stopped, each call first empties the files under the
// directory it handed out before, truncating and not removing them (see
// work): the disk use stays bounded, and no dirty copy is left for a
// background writeback to land in a later measurement.
func freshDirs(b *testing.B) func() string {
	parent := workDir(b)
	i, prev := 0, ""
	return func() string {
		b.StopTimer()
		defer b.StartTimer()
		if prev != "" {
			err := filepath.WalkDir(prev, func(p string, d os.DirEntry, err error) error {
				if err == nil && d.Type().IsRegular() {
					err = os.Truncate(p, 0)
				}
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
		}
		i++
		prev = filepath.Join(parent, fmt.Sprint(i))
		if err := os.Mkdir(prev, 0o700); err != nil {
			b.Fatal(err)
		}
		return prev
	}
}
