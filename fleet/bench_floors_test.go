package fleet

import (
	"context"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// The floors the fleet's benchmarks time beside each protocol (see
// bench_test.go), and the timer that sums them.

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
