package store

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sessdb/gates"
)

// The open of a staged file judges its tail by the last byte, and the
// read that checksums what is promoted comes after: a container that
// changes that byte in between (same size) had its file promoted with
// the open's flag. A newline made a letter was promoted with no newline
// added and torn_tail false; a letter made a newline got a second one.
// The read now sees the last byte too, and one the open did not see is
// the staged file changed while it was promoted: a fault, nothing read
// on, the run left in place for a retry.
func TestAStagedFileWhoseLastByteChangesAfterItsOpenIsNotPromoted(t *testing.T) {
	for _, c := range []struct {
		name         string
		tail, within string // the staged file's last byte, then after the open
	}{
		{"a newline made a letter", "\n", "x"},
		{"a letter made a newline", "x", "\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, _, _ := newTestStore(t, gates.Bounds{})
			sess, jobDir := mustResolve(t, s, testKey, localJob())
			run := string(transcriptBytes(testClockStart, "the run"))
			run = strings.TrimSuffix(run, "\n") + c.tail
			stage(t, jobDir, []byte(run))
			sf, reason, err := s.openStaged(jobDir, false, sess.Ticket, sess.Key)
			if err != nil || reason != "" {
				t.Fatalf("openStaged: %q, %v", reason, err)
			}
			defer sf.close()
			p := filepath.Join(jobDir, StagedDirName, TranscriptName)
			f, err := os.OpenFile(p, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteAt([]byte(c.within), int64(len(run)-1)); err != nil {
				t.Fatal(err)
			}
			f.Close()
			if _, err := readStaged(context.Background(), sf, sess); err == nil || !strings.Contains(err.Error(), "changed while it was promoted") {
				t.Errorf("readStaged after the last byte changed: %v; want the staged file changed while it was promoted", err)
			}
		})
	}
}
