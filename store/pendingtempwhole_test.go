package store

import (
	"context"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/db"
	"sessdb/internal/fsat"
)

// PendingTempWhole, for the migrations' dry runs: a whole temp is whole;
// a damaged one, one of another size, one gone and one that is not a
// regular file are not, with no error; a look its context stopped is an
// error, never "not whole" (a dry run would then plan the temp's
// removal), where it read nothing too (a temp gone, of another size, or
// a FIFO: no read of it asks ctx, so PendingTempWhole asks after it).
func TestPendingTempWholeTellsAStoppedReadFromADamagedTemp(t *testing.T) {
	dir := t.TempDir()
	body := transcriptBytes(testClockStart, "a run")
	p := &db.Pending{Tmp: tmpPrefix + "0123456789abcdef", Size: int64(len(body)), CRC32C: uint64(crc32.Checksum(body, castagnoli)), Gen: 2}
	tmp := filepath.Join(dir, p.Tmp)
	kd, err := fsat.OpenDir(dir)
	must(t, err)
	defer kd.Close()
	stopped, stop := context.WithCancel(context.Background())
	stop()
	for _, c := range []struct {
		name  string
		put   func()
		ctx   context.Context
		whole bool
		err   error
	}{
		{"whole", func() { must(t, os.WriteFile(tmp, body, 0o600)) }, context.Background(), true, nil},
		{"whole, its read stopped", func() {}, stopped, false, context.Canceled},
		{"damaged", func() { must(t, os.WriteFile(tmp, append(body[:len(body)-2:len(body)-2], "x\n"...), 0o600)) }, context.Background(), false, nil},
		{"damaged, its look stopped", func() {}, stopped, false, context.Canceled},
		{"another size", func() { must(t, os.WriteFile(tmp, body[:len(body)-1], 0o600)) }, context.Background(), false, nil},
		{"another size, its look stopped", func() {}, stopped, false, context.Canceled},
		{"gone", func() { must(t, os.Remove(tmp)) }, context.Background(), false, nil},
		{"gone, its look stopped", func() {}, stopped, false, context.Canceled},
		{"a FIFO", func() { must(t, unix.Mkfifo(tmp, 0o600)) }, context.Background(), false, nil},
		{"a FIFO, its look stopped", func() {}, stopped, false, context.Canceled},
	} {
		c.put()
		whole, err := PendingTempWhole(c.ctx, kd, p)
		if whole != c.whole || !errors.Is(err, c.err) || (c.err == nil) != (err == nil) {
			t.Errorf("%s: %v, %v; want %v, %v", c.name, whole, err, c.whole, c.err)
		}
	}
}

// And the stop ends the read, not only its answer: a temp whose size its
// record names at a terabyte (sparse, the size a crash or a hand could
// leave) is not read to its end once ctx is done. Before every megabyte
// the read looks at ctx; a read that ignored it took minutes here.
func TestPendingTempWholeReadsNoMoreOnceItsContextIsDone(t *testing.T) {
	dir := t.TempDir()
	const size = 1 << 40
	p := &db.Pending{Tmp: tmpPrefix + "0123456789abcdef", Size: size, Gen: 2}
	tmp := filepath.Join(dir, p.Tmp)
	must(t, os.WriteFile(tmp, nil, 0o600))
	if err := os.Truncate(tmp, size); err != nil {
		t.Skipf("no sparse file of %d bytes here: %v", int64(size), err)
	}
	kd, err := fsat.OpenDir(dir)
	must(t, err)
	defer kd.Close()
	stopped, stop := context.WithCancel(context.Background())
	stop()
	type answer struct {
		whole bool
		err   error
	}
	done := make(chan answer, 1)
	go func() {
		whole, err := PendingTempWhole(stopped, kd, p)
		done <- answer{whole, err}
	}()
	select {
	case a := <-done:
		if a.whole || !errors.Is(a.err, context.Canceled) {
			t.Errorf("%v, %v; want false, %v", a.whole, a.err, context.Canceled)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("PendingTempWhole with its context done still reading a terabyte temp after 10s; want it back at once")
	}
}
