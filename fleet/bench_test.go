package fleet

import (
	"bytes"
	"context"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"sessdb/fleet/etcdmeta"
	"sessdb/gates"
	"sessdb/internal/bench"
	"sessdb/internal/etcdtest"
	"sessdb/store"
	"sessdb/store/transcript"
)

// The fleet's benchmarks measure each protocol side by side with the
// floors etcd and the disk set on the same machine, in the same process
// and the same loop: every iteration times the floor's operations and then
// the protocol's, so that both see the same load (the machines are shared
// and noisy). Each reports its own metrics:
//
//	promote-ns, resolve-ns   one store.Promote / store.Resolve on the fleet
//	floor-ns                 the floor of the same iteration (below); x-floor the ratio
//	reading-ns               pi's reading computed from the staged transcript, which every
//	                         promotion does (transcript.ReadEnd); x-floor-and-reading the
//	                         promote's ratio to the floor plus it
//	rename-ns, peek-ns       the rest the design asks of a promotion: the rename that names
//	                         the file and the directory fsync that makes it durable, and
//	                         Begin's serializable read; x-design the ratio to all of it
//	crc-copy-ns              a copy through user space with a CRC32C of every byte, which
//	                         a resolve's verified copy cannot do with less;
//	                         x-get-and-crc-copy the resolve's ratio to it and the read
//	jobdir-ns                the job dir, session dir, empty staged file and ticket every
//	                         resolve writes; x-design the ratio to all of the above
//	promotes/s, txns/s       a pool's committed promotions, and bare guarded
//	                         transactions, per second; x-txns the ratio
//	etcd-ops/s               a pool's promotions' etcd work alone (the serializable read of
//	                         the record, the guarded put), per second; x-txns-etcd its
//	                         ratio to bare transactions
//
// The floors: a promotion cannot do less than write and fsync the file
// into the shared dir (create, write, fsync, close: file-ns) and commit one
// guarded etcd transaction putting the record's and a history entry's
// bytes (txn-ns); a resolve cannot do less than one linearizable etcd
// read of the record's bytes (get-ns) and a plain copy of the file into a
// new job dir (copy-ns).
//
// Run them all with go test -run '^$' -bench . ./fleet/ (about four
// minutes); docs/PERFORMANCE.md has the figures.

var sizes = []struct {
	name  string
	bytes int
}{{"64KiB", 64 << 10}, {"8MiB", 8 << 20}}

var benchBounds = gates.Bounds{MaxBytes: 8 << 20, TTL: 14 * 24 * time.Hour, MaxResumeChain: 1 << 40, MaxContextPct: 100}

// benchReq reports a reading, as a runner's override, like internal/bench.
var benchReq = store.PromoteRequest{PiVersion: testJob.PiVersion, Tokens: ptrTo(int64(12345)), Window: 200000}

func ptrTo[T any](v T) *T { return &v }

// benchEnv is a fleet on a cluster for one benchmark.
type benchEnv struct {
	b    *testing.B
	c    *etcdtest.Cluster
	cli  *clientv3.Client
	be   *Backend
	s    *store.Store
	dir  string // the transcripts dir
	work string // job dirs
}

func newBenchEnv(b *testing.B, c *etcdtest.Cluster) *benchEnv {
	e := &benchEnv{b: b, c: c, cli: c.Client(b), dir: b.TempDir(), work: b.TempDir()}
	be, err := Open(Config{Config: etcdmeta.Config{Endpoints: c.Endpoints(), Prefix: "/bench/" + randHex(8), RequestTimeout: 30 * time.Second}, TranscriptsDir: e.dir})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { be.Close() })
	e.be, e.s = be, store.NewOn(be, store.Options{Bounds: benchBounds})
	return e
}

// fill promotes into key n times (past the 64-entry history, so every
// commit trims one), the last time data, and returns a session resolved
// from that last one, whose staged file is the delivered bytes: promoting
// it again with a fresh ticket is a steady-state promotion. The
// promotions before the last are of a 4 KiB transcript, to spare the disk
// without deleting anything (on ext4, creating files where many were just
// deleted is measurably slower, see docs/PERFORMANCE.md). It is safe to
// call from many goroutines.
func (e *benchEnv) fill(s *store.Store, key string, data []byte, n int) (store.Session, error) {
	work, err := os.MkdirTemp(e.work, "fill-")
	if err != nil {
		return store.Session{}, err
	}
	small := bench.Transcript(4 << 10)
	for i := range n {
		jobDir := filepath.Join(work, fmt.Sprint(i))
		staged, req := small, benchReq
		if i == n-1 {
			staged, req.AllowRewrite = data, true
		}
		sess, err := s.Resolve(key, testJob, jobDir)
		if err == nil {
			err = os.WriteFile(filepath.Join(jobDir, store.StagedDirName, store.TranscriptName), staged, 0o600)
		}
		if err == nil {
			var res store.PromoteResult
			if res, err = s.Promote(sess, req); err == nil && !res.Promoted {
				err = fmt.Errorf("promote %d: %s", i, res.Reason)
			}
		}
		if err != nil {
			return store.Session{}, err
		}
	}
	sess, err := s.Resolve(key, testJob, filepath.Join(work, "last"))
	if err == nil && !sess.Resume {
		err = fmt.Errorf("resolve after the fill: %s", sess.Reason)
	}
	return sess, err
}

func (e *benchEnv) mustFill(s *store.Store, key string, data []byte, n int) store.Session {
	e.b.Helper()
	sess, err := e.fill(s, key, data, n)
	if err != nil {
		e.b.Fatal(err)
	}
	return sess
}

// values are the bytes of key's record and of its newest history entry,
// as etcd holds them: what the floor transaction writes.
func (e *benchEnv) values(key string) (rec, hist string) {
	p := e.be.meta.Prefix()
	r, err := e.cli.Get(context.Background(), p+"/record/"+key)
	if err != nil || len(r.Kvs) != 1 {
		e.b.Fatalf("record: %v", err)
	}
	h, err := e.cli.Get(context.Background(), p+"/history/"+key+"/", clientv3.WithLastKey()...)
	if err != nil || len(h.Kvs) != 1 {
		e.b.Fatalf("history: %v", err)
	}
	return string(r.Kvs[0].Value), string(h.Kvs[0].Value)
}

// base is what key holds now, as a ticket records it.
func (e *benchEnv) base(key string) store.Base {
	st, err := e.be.meta.GetRecord(context.Background(), key)
	if err != nil {
		e.b.Fatal(err)
	}
	return baseOf(st.Record, st.Rev)
}

// floorTxn is a bare guarded transaction on its own key, putting a
// record's and a history entry's bytes, as a promotion's commit does.
type floorTxn struct {
	cli       *clientv3.Client
	key       string
	rec, hist string
	rev       int64
	n         int
}

func (f *floorTxn) do() error {
	f.n++
	resp, err := f.cli.Txn(context.Background()).
		If(clientv3.Compare(clientv3.ModRevision(f.key), "=", f.rev)).
		Then(clientv3.OpPut(f.key, f.rec), clientv3.OpPut(fmt.Sprintf("%s/h/%016x", f.key, f.n), f.hist)).
		Commit()
	if err == nil && !resp.Succeeded {
		err = fmt.Errorf("floor txn on %s lost its compare", f.key)
	}
	if err == nil {
		f.rev = resp.Header.Revision
	}
	return err
}

// writeFsync is the floor under writing a generation: create, write,
// fsync, close.
func writeFsync(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// copyInto is the floor under a resolve's copy: open the file, create a
// new one in a new directory, copy, close both.
func copyInto(src, dir string, data int) error {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(filepath.Join(dir, "copy.jsonl"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	n, err := io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil && n != int64(data) {
		err = fmt.Errorf("copied %d of %d bytes", n, data)
	}
	return err
}

// timer sums the durations of named steps over a benchmark's iterations.
type timer struct {
	sum      map[string]time.Duration
	reported map[string]bool
	last     time.Time
}

func newTimer() *timer { return &timer{sum: map[string]time.Duration{}, reported: map[string]bool{}} }

func (t *timer) start() { t.last = time.Now() }

func (t *timer) lap(name string) {
	now := time.Now()
	t.sum[name] += now.Sub(t.last)
	t.last = now
}

// extra reports the mean of the steps not reported yet, and protocol's
// ratio to the sum of steps, as metric.
func (t *timer) extra(b *testing.B, n int, protocol, metric string, steps ...string) {
	var sum time.Duration
	for _, s := range steps {
		sum += t.sum[s]
		if !t.reported[s] {
			t.reported[s] = true
			b.ReportMetric(float64(t.sum[s])/float64(n), s)
		}
	}
	b.ReportMetric(float64(t.sum[protocol])/float64(sum), metric)
}

// report reports each step's mean, the floor's (the sum of floorSteps) and
// the protocol's ratio to it.
func (t *timer) report(b *testing.B, n int, protocol string, floorSteps ...string) {
	mean := func(d time.Duration) float64 { return float64(d) / float64(n) }
	var floor time.Duration
	for _, s := range floorSteps {
		floor += t.sum[s]
		b.ReportMetric(mean(t.sum[s]), s)
		t.reported[s] = true
	}
	b.ReportMetric(mean(floor), "floor-ns")
	b.ReportMetric(mean(t.sum[protocol]), protocol)
	b.ReportMetric(float64(t.sum[protocol])/float64(floor), "x-floor")
}

// BenchmarkFleet runs every fleet benchmark on one member and on three,
// and the key-dir store's promote and resolve beside them.
func BenchmarkFleet(b *testing.B) {
	for _, n := range []int{1, 3} {
		c := etcdtest.Start(b, etcdtest.Options{Members: n})
		b.Run(fmt.Sprintf("members=%d", n), func(b *testing.B) {
			for _, sz := range sizes {
				b.Run("promote/"+sz.name, func(b *testing.B) { benchPromote(b, newBenchEnv(b, c), sz.bytes) })
				b.Run("resolve/"+sz.name, func(b *testing.B) { benchResolve(b, newBenchEnv(b, c), sz.bytes) })
			}
			b.Run("throughput", func(b *testing.B) { benchThroughput(b, c) })
			if n == 3 {
				b.Run("resolve-member-down/64KiB", func(b *testing.B) {
					e := newBenchEnv(b, c)
					down := (c.Leader() + 1) % c.Size()
					c.Stop(down)
					defer c.Restart(down)
					benchResolve(b, e, 64<<10)
				})
			}
		})
		c.Close()
	}
	for _, sz := range sizes {
		b.Run("bbolt/promote/"+sz.name, func(b *testing.B) { benchKeyDirsPromote(b, sz.bytes) })
		b.Run("bbolt/resolve/"+sz.name, func(b *testing.B) { benchKeyDirsResolve(b, sz.bytes) })
	}
}

// benchPromote times, per iteration, the floor (a new file written and
// fsynced into the shared dir, one bare guarded transaction) and one
// steady-state promotion with a fresh ticket.
func benchPromote(b *testing.B, e *benchEnv, size int) {
	data := bench.Transcript(size)
	key := store.Key("github", "bench", "promote")
	sess := e.mustFill(e.s, key, data, 70)
	rec, hist := e.values(key)
	floor := &floorTxn{cli: e.cli, key: "/floor/" + randHex(8), rec: rec, hist: hist}
	floorDir := filepath.Join(e.dir, "floor")
	if err := os.Mkdir(floorDir, 0o700); err != nil {
		b.Fatal(err)
	}
	t := newTimer()
	b.SetBytes(int64(size))
	n := 0
	for b.Loop() {
		n++
		tmp, final := filepath.Join(floorDir, fmt.Sprint("tmp-", n)), filepath.Join(floorDir, fmt.Sprint(n))
		t.start()
		if err := writeFsync(tmp, data); err != nil {
			b.Fatal(err)
		}
		t.lap("file-ns")
		if err := floor.do(); err != nil {
			b.Fatal(err)
		}
		t.lap("txn-ns")
		if _, err := transcript.ReadEnd(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
		t.lap("reading-ns")
		if err := renameDirSync(tmp, final); err != nil {
			b.Fatal(err)
		}
		t.lap("rename-ns")
		if _, err := e.be.meta.PeekRecord(context.Background(), key); err != nil {
			b.Fatal(err)
		}
		t.lap("peek-ns")
		os.Truncate(final, 0) // untimed: the disk, not the figure
		sess.Ticket = fmt.Sprintf("%032x", n)
		res, err := e.s.Promote(sess, benchReq)
		t.lap("promote-ns")
		if err != nil || !res.Promoted || res.Repeat {
			b.Fatalf("promote: %+v, %v", res, err)
		}
		sess.Base = e.base(key) // untimed: the next job's ticket
	}
	t.report(b, n, "promote-ns", "file-ns", "txn-ns")
	// Beyond the floors, what the design asks of every promotion: the
	// job contract reads the whole staged transcript for pi's own reading
	// (store.readStaged, on every backend); the file takes its name by a
	// rename made durable by a directory fsync; Begin reads the record.
	t.extra(b, n, "promote-ns", "x-floor-and-reading", "file-ns", "txn-ns", "reading-ns")
	t.extra(b, n, "promote-ns", "x-design", "file-ns", "txn-ns", "reading-ns", "rename-ns", "peek-ns")
}

// renameDirSync gives a written file its name and makes the name durable,
// as shared.Write does after its fsync.
func renameDirSync(from, to string) error {
	if err := os.Rename(from, to); err != nil {
		return err
	}
	d, err := os.Open(filepath.Dir(to))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// benchResolve times, per iteration, the floor (one linearizable read of
// the record's bytes, a plain copy of the generation's file into a new
// directory) and one resolve into a new job dir. The copies are truncated
// between iterations, untimed, so that a run does not fill the disk.
func benchResolve(b *testing.B, e *benchEnv, size int) {
	data := bench.Transcript(size)
	key := store.Key("github", "bench", "resolve")
	e.mustFill(e.s, key, data, 70)
	rec, _ := e.values(key)
	getKey := "/floor/" + randHex(8)
	if _, err := e.cli.Put(context.Background(), getKey, rec); err != nil {
		b.Fatal(err)
	}
	st, err := e.be.meta.GetRecord(context.Background(), key)
	if err != nil {
		b.Fatal(err)
	}
	src := filepath.Join(e.dir, st.Record.Transcript.File)
	work := b.TempDir()
	t := newTimer()
	b.SetBytes(int64(size))
	n := 0
	for b.Loop() {
		n++
		floorDir, jobDir := filepath.Join(work, fmt.Sprint("f", n)), filepath.Join(work, fmt.Sprint("j", n))
		t.start()
		if _, err := e.cli.Get(context.Background(), getKey); err != nil {
			b.Fatal(err)
		}
		t.lap("get-ns")
		if err := copyInto(src, floorDir, size); err != nil {
			b.Fatal(err)
		}
		t.lap("copy-ns")
		if err := crcCopyInto(src, floorDir+"c", size); err != nil {
			b.Fatal(err)
		}
		t.lap("crc-copy-ns")
		if err := jobDirWrites(jobDir + "x"); err != nil {
			b.Fatal(err)
		}
		t.lap("jobdir-ns")
		sess, err := e.s.Resolve(key, testJob, jobDir)
		t.lap("resolve-ns")
		if err != nil || !sess.Resume {
			b.Fatalf("resolve: %+v, %v", sess, err)
		}
		os.Truncate(filepath.Join(floorDir, "copy.jsonl"), 0)
		os.Truncate(filepath.Join(floorDir+"c", "copy.jsonl"), 0)
		os.Truncate(filepath.Join(jobDir, store.StagedDirName, store.TranscriptName), 0)
	}
	t.report(b, n, "resolve-ns", "get-ns", "copy-ns")
	// A plain copy is in-kernel (copy_file_range); a resolve must see
	// every byte to check the copy's CRC32C against the record.
	t.extra(b, n, "resolve-ns", "x-get-and-crc-copy", "get-ns", "crc-copy-ns")
	// Every resolve, on any backend, also makes the job's dirs, its
	// staged file and its ticket.
	t.extra(b, n, "resolve-ns", "x-design", "get-ns", "crc-copy-ns", "jobdir-ns")
}

// jobDirWrites is what a resolve writes besides the copy: the job dir,
// its session dir, the empty staged file, and the ticket through a temp
// and a rename.
func jobDirWrites(jobDir string) error {
	session := filepath.Join(jobDir, store.StagedDirName)
	if err := os.MkdirAll(session, 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(session, store.TranscriptName), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	f.Close()
	tmp := filepath.Join(jobDir, ".ticket.tmp")
	if err := os.WriteFile(tmp, make([]byte, 400), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(jobDir, store.TicketName))
}

// crcCopyInto is copyInto through user space with a CRC32C of every
// byte, the least a copy that verifies what it copies does.
func crcCopyInto(src, dir string, data int) error {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(filepath.Join(dir, "copy.jsonl"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	h := crc32.New(crc32.MakeTable(crc32.Castagnoli))
	n, err := io.Copy(io.MultiWriter(out, h), struct{ io.Reader }{in})
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil && n != int64(data) {
		err = fmt.Errorf("copied %d of %d bytes", n, data)
	}
	return err
}

// benchThroughput measures promotions per second with 1, 4 and 16
// workers: on keys of their own, in alternating bursts with bare guarded
// transactions by as many workers on keys of their own (the floor); and
// all on one key, where each job resolves and promotes and all but one
// of a round's racers are superseded.
func benchThroughput(b *testing.B, c *etcdtest.Cluster) {
	e := newBenchEnv(b, c)
	data := bench.Transcript(64 << 10)
	const maxWorkers = 16
	sessions, errs := make([]store.Session, maxWorkers), make([]error, maxWorkers)
	var wg sync.WaitGroup
	for w := range maxWorkers {
		wg.Go(func() {
			sessions[w], errs[w] = e.fill(e.s, store.Key("github", "bench", fmt.Sprint("distinct-", w)), data, 70)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	rec, hist := e.values(sessions[0].Key)
	floors := make([]*floorTxn, maxWorkers)
	for w := range floors {
		floors[w] = &floorTxn{cli: e.cli, key: "/floor/" + randHex(8), rec: rec, hist: hist}
	}
	// A promotion's own etcd work, without its files: the read of the
	// record and history, and the guarded put, on keys of their own.
	etcdKeys := make([]string, maxWorkers)
	for w := range etcdKeys {
		etcdKeys[w] = store.Key("github", "bench", fmt.Sprint("etcd-", w))
		if _, err := e.fill(e.s, etcdKeys[w], data, 70); err != nil {
			b.Fatal(err)
		}
	}
	st, err := e.be.meta.Get(context.Background(), etcdKeys[0])
	if err != nil {
		b.Fatal(err)
	}
	entry := st.History[len(st.History)-1]
	var tickets atomic.Int64
	for _, workers := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("workers=%d/keys=distinct", workers), func(b *testing.B) {
			// One operation per worker per burst: between two bursts each
			// worker's ticket gets the base its promotion made, untimed.
			const burst = 1
			var txnTime, etcdTime, promoteTime time.Duration
			rounds := 0
			for b.Loop() {
				rounds++
				txnTime += pool(b, workers, burst, func(w int) error { return floors[w].do() })
				etcdTime += pool(b, workers, burst, func(w int) error { return etcdOps(e, etcdKeys[w], entry) })
				promoteTime += pool(b, workers, burst, func(w int) error {
					sess := sessions[w]
					sess.Ticket = fmt.Sprintf("%032x", tickets.Add(1))
					res, err := e.s.Promote(sess, benchReq)
					if err == nil && (!res.Promoted || res.Repeat) {
						err = fmt.Errorf("promote: %+v", res)
					}
					return err
				})
				for w := range workers {
					sessions[w].Base = e.base(sessions[w].Key)
				}
			}
			ops := float64(rounds * workers * burst)
			b.ReportMetric(ops/txnTime.Seconds(), "txns/s")
			b.ReportMetric(ops/promoteTime.Seconds(), "promotes/s")
			b.ReportMetric(txnTime.Seconds()/promoteTime.Seconds(), "x-txns")
			b.ReportMetric(ops/etcdTime.Seconds(), "etcd-ops/s")
			b.ReportMetric(txnTime.Seconds()/etcdTime.Seconds(), "x-txns-etcd")
		})
		b.Run(fmt.Sprintf("workers=%d/keys=one", workers), func(b *testing.B) {
			key := store.Key("github", "bench", fmt.Sprint("one-", workers))
			e.mustFill(e.s, key, data, 1)
			var promoted, superseded atomic.Int64
			var elapsed time.Duration
			for b.Loop() {
				elapsed += pool(b, workers, 1, func(int) error {
					jobDir, err := os.MkdirTemp(e.work, "job-")
					if err != nil {
						return err
					}
					defer os.RemoveAll(jobDir)
					sess, err := e.s.Resolve(key, testJob, jobDir)
					if err != nil {
						return err
					}
					res, err := e.s.Promote(sess, benchReq)
					switch {
					case err != nil:
						return err
					case res.Promoted:
						promoted.Add(1)
					case res.Reason == gates.Superseded:
						superseded.Add(1)
					default:
						return fmt.Errorf("promote: %+v", res)
					}
					return nil
				})
			}
			b.ReportMetric(float64(promoted.Load())/elapsed.Seconds(), "promotes/s")
			b.ReportMetric(float64(superseded.Load())/float64(promoted.Load()+superseded.Load()), "superseded/job")
		})
	}
}

// etcdOps is what a promotion whose base is in place asks of etcd: the
// serializable read of the record (Begin) and the guarded put of the next
// record and its history entry (Commit).
func etcdOps(e *benchEnv, key string, entry etcdmeta.HistoryEntry) error {
	ctx := context.Background()
	st, err := e.be.meta.PeekRecord(ctx, key)
	if err != nil {
		return err
	}
	rec := st.Record
	t := *rec.Transcript
	t.Gen++
	rec.Transcript = &t
	entry.Gen, entry.Ticket = t.Gen, randHex(16)
	_, err = e.be.meta.Put(ctx, key, st.Rev, rec, entry)
	return err
}

// pool runs per operations on each of workers goroutines and returns the
// wall time it took.
func pool(b *testing.B, workers, per int, op func(w int) error) time.Duration {
	start := time.Now()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for range per {
				if err := op(w); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
	return time.Since(start)
}

// The key-dir store (bbolt) beside the fleet, with the same transcript,
// steady state and tickets.
func benchKeyDirsPromote(b *testing.B, size int) {
	e := &benchEnv{b: b, work: b.TempDir()}
	s, err := store.New(filepath.Join(b.TempDir(), "sessions"), store.Options{Bounds: benchBounds})
	if err != nil {
		b.Fatal(err)
	}
	sess := e.mustFill(s, store.Key("github", "bench", "promote"), bench.Transcript(size), 70)
	b.SetBytes(int64(size))
	n := 0
	for b.Loop() {
		n++
		sess.Ticket = fmt.Sprintf("%032x", n)
		res, err := s.Promote(sess, benchReq)
		if err != nil || !res.Promoted || res.Repeat {
			b.Fatalf("promote: %+v, %v", res, err)
		}
		sess.Base.Gen = res.Gen
	}
}

func benchKeyDirsResolve(b *testing.B, size int) {
	e := &benchEnv{b: b, work: b.TempDir()}
	s, err := store.New(filepath.Join(b.TempDir(), "sessions"), store.Options{Bounds: benchBounds})
	if err != nil {
		b.Fatal(err)
	}
	key := store.Key("github", "bench", "resolve")
	e.mustFill(s, key, bench.Transcript(size), 70)
	work := b.TempDir()
	b.SetBytes(int64(size))
	n := 0
	for b.Loop() {
		n++
		jobDir := filepath.Join(work, fmt.Sprint(n))
		sess, err := s.Resolve(key, testJob, jobDir)
		if err != nil || !sess.Resume {
			b.Fatalf("resolve: %+v, %v", sess, err)
		}
		b.StopTimer()
		os.Truncate(filepath.Join(jobDir, store.StagedDirName, store.TranscriptName), 0)
		b.StartTimer()
	}
}

// BenchmarkFleetBytesPerKey reports what etcd stores per key with a full
// 64-entry history: the bytes of its keys and values (logical-B/key), and
// what its database grows by per key, defragmented (db-B/key), over 200
// keys written with a real promotion's record and history entry. One op
// is the whole measurement.
func BenchmarkFleetBytesPerKey(b *testing.B) {
	c := etcdtest.Start1(b)
	e := newBenchEnv(b, c)
	src := store.Key("github", "bench", "bytes")
	e.mustFill(e.s, src, bench.Transcript(64<<10), 1)
	rec, hist := e.values(src)
	const keys = 200
	for b.Loop() {
		before := dbSize(b, e.cli, c)
		prefix := "/bytes/" + randHex(8)
		var logical int64
		for k := range keys {
			key := store.Key("github", "bytes", fmt.Sprint(k))
			ops := []clientv3.Op{clientv3.OpPut(prefix+"/record/"+key, rec)}
			logical += int64(len(prefix+"/record/"+key) + len(rec))
			for seq := 1; seq <= etcdmeta.HistoryLimit; seq++ {
				hk := fmt.Sprintf("%s/history/%s/%016x", prefix, key, seq)
				ops = append(ops, clientv3.OpPut(hk, hist))
				logical += int64(len(hk) + len(hist))
			}
			if _, err := e.cli.Txn(context.Background()).Then(ops...).Commit(); err != nil {
				b.Fatal(err)
			}
		}
		after := dbSize(b, e.cli, c)
		b.ReportMetric(float64(logical)/keys, "logical-B/key")
		b.ReportMetric(float64(after-before)/keys, "db-B/key")
	}
}

// dbSize defragments etcd's database and returns the bytes it uses. The
// keys measured are each written once, in one transaction, so there is no
// older revision of theirs for a compaction to remove.
func dbSize(b *testing.B, cli *clientv3.Client, c *etcdtest.Cluster) int64 {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := cli.Defragment(ctx, c.Endpoint(0)); err != nil {
		b.Fatal(err)
	}
	st, err := cli.Status(ctx, c.Endpoint(0))
	if err != nil {
		b.Fatal(err)
	}
	return st.DbSizeInUse
}
