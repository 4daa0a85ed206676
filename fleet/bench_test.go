package fleet

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
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
		// A Backend's first promotion claims the transcripts dir (its
		// mark read, the fleet's ID read): a CLI command's only one pays
		// it, a long-running worker once.
		e.be.claimed.Store(false)
		if err := e.be.Claim(context.Background()); err != nil {
			b.Fatal(err)
		}
		t.lap("claim-ns")
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
	b.ReportMetric(float64(t.sum["claim-ns"])/float64(n), "claim-ns")
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
