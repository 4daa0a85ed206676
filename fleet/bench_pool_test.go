package fleet

import (
	"context"
	"fmt"
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
)

// The fleet's throughput and storage benchmarks; see bench_test.go for
// the method and the metrics.

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
	// The file floor's own dirs, one per worker, as a key's dir in the
	// shared directory is: the floor under a promotion's file
	// (create, write, fsync), without its name's rename and directory
	// fsync, without etcd and without the reading.
	fileDirs := make([]string, maxWorkers)
	for w := range fileDirs {
		fileDirs[w] = filepath.Join(e.dir, fmt.Sprint("file-floor-", w))
		if err := os.Mkdir(fileDirs[w], 0o700); err != nil {
			b.Fatal(err)
		}
	}
	var tickets, files atomic.Int64
	for _, workers := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("workers=%d/keys=distinct", workers), func(b *testing.B) {
			// One operation per worker per burst: between two bursts each
			// worker's ticket gets the base its promotion made, untimed.
			const burst = 1
			var txnTime, etcdTime, fileTime, promoteTime time.Duration
			rounds := 0
			for b.Loop() {
				rounds++
				txnTime += pool(b, workers, burst, func(w int) error { return floors[w].do() })
				name := fmt.Sprint(files.Add(1))
				fileTime += pool(b, workers, burst, func(w int) error {
					return writeFsync(filepath.Join(fileDirs[w], name), data)
				})
				for w := range workers { // untimed: the disk, not the figure
					os.Truncate(filepath.Join(fileDirs[w], name), 0)
				}
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
			// What the disk alone allows: every promotion writes and fsyncs
			// its file, so on one disk its rate is at most about this.
			b.ReportMetric(ops/fileTime.Seconds(), "files/s")
			b.ReportMetric(txnTime.Seconds()/fileTime.Seconds(), "x-txns-files")
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
