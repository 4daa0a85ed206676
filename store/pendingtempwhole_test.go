package store

import (
	"context"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"sessdb/db"
	"sessdb/internal/fsat"
)

// PendingTempWhole, for the migrations' dry runs: a whole temp is whole;
// a damaged one, one gone and one that is not a regular file are not,
// with no error; a read its context stopped is an error, never "not
// whole" (a dry run would then plan the temp's removal).
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
		{"gone", func() { must(t, os.Remove(tmp)) }, context.Background(), false, nil},
		{"a FIFO", func() { must(t, unix.Mkfifo(tmp, 0o600)) }, context.Background(), false, nil},
	} {
		c.put()
		whole, err := PendingTempWhole(c.ctx, kd, p)
		if whole != c.whole || !errors.Is(err, c.err) || (c.err == nil) != (err == nil) {
			t.Errorf("%s: %v, %v; want %v, %v", c.name, whole, err, c.whole, c.err)
		}
	}
}
