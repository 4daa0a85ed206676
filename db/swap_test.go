package db

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// What is swapped in at meta.db's name after the lstat that judged it a
// regular file is refused by the open itself: a symbolic link is never
// followed (nothing outside the key dir is read or written through it),
// and a FIFO never blocks the open.
func TestAMetaDBSwappedAfterItsLstatIsRefused(t *testing.T) {
	for _, c := range []struct {
		name, want string
		swap       func(t *testing.T, kd keyDir, outside string)
	}{
		{"a symbolic link", "symbolic link", func(t *testing.T, kd keyDir, outside string) {
			if err := os.Symlink(outside, kd.db); err != nil {
				t.Fatal(err)
			}
		}},
		{"a FIFO", "not a regular file", func(t *testing.T, kd keyDir, outside string) {
			if err := unix.Mkfifo(kd.db, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		for _, write := range []bool{false, true} {
			t.Run(c.name, func(t *testing.T) {
				kd := makeDB(t, 1)
				// The file outside the key dir is a whole meta.db: followed,
				// it would be read, and written by a writer.
				outside := filepath.Join(t.TempDir(), "host-"+FileName)
				if err := os.Rename(kd.db, outside); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(kd.db, readFile(t, outside), 0o600); err != nil {
					t.Fatal(err)
				}
				was := readFile(t, outside)
				testHookLstated = func() {
					testHookLstated = nil
					if err := os.Remove(kd.db); err != nil {
						t.Fatal(err)
					}
					c.swap(t, kd, outside)
				}
				defer func() { testHookLstated = nil }()
				open := OpenReader
				if write {
					open = OpenWriter
				}
				done := make(chan error, 1)
				go func() {
					d, err := open(kd.dir, kd.db, testOpts)
					if err == nil {
						if write {
							err = d.Update(func(tx *Tx) error { return tx.PutVenue("written through") })
						}
						d.Close()
					}
					done <- err
				}()
				select {
				case err := <-done:
					wantErr(t, err, ErrDamaged)
					if err != nil && !strings.Contains(err.Error(), c.want) {
						t.Errorf("write=%v: %v; want %q", write, err, c.want)
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("write=%v: the open still blocks 10s after %s was swapped in", write, c.name)
				}
				if !bytes.Equal(readFile(t, outside), was) {
					t.Errorf("write=%v: the file outside the key dir was written", write)
				}
			})
		}
	}
}
