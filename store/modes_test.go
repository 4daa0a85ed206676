package store

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"sessdb/db"
	"sessdb/gates"
)

// What a job is handed and what the store keeps are the worker's alone,
// whatever the process's umask: the job dir resolve makes and the session
// dir 0700 and the staged file 0600 (so the container must run as the
// worker's uid, as README says), the ticket 0600 (docs/on-disk.md), and
// the sessions root and key dir 0700, the transcript and meta.db 0600. A
// umask that takes the owner's own bits does not take them: under 0777 a
// store as a user who is not root made a job dir it could not open, and a
// key dir that failed every later resolve of the key. A cold start and a
// resume each, under each umask.
func TestModesArePrivateWhateverTheUmask(t *testing.T) {
	for _, mask := range []int{0, 0o177, 0o777} {
		t.Run(fmt.Sprintf("umask %03o", mask), func(t *testing.T) {
			base := t.TempDir()
			s, root, _ := newTestStoreAt(t, filepath.Join(base, "sessions"), gates.Bounds{})
			old := syscall.Umask(mask)
			defer syscall.Umask(old)
			mode := func(p string, want os.FileMode) {
				t.Helper()
				fi, err := os.Lstat(p)
				if err != nil {
					t.Fatal(err)
				}
				if fi.Mode().Perm() != want {
					t.Errorf("%s: mode %v, want %v", p, fi.Mode().Perm(), want)
				}
			}
			for i, resume := range []bool{false, true} {
				jobDir := filepath.Join(base, fmt.Sprint("job-", i))
				sess, err := s.Resolve(testKey, localJob(), jobDir)
				if err != nil {
					t.Fatalf("resolve %d: %v", i, err)
				}
				want(t, sess, resume, map[bool]gates.Reason{false: gates.Absent, true: gates.Resumed}[resume])
				mode(jobDir, 0o700)
				mode(filepath.Join(jobDir, StagedDirName), 0o700)
				mode(filepath.Join(jobDir, StagedDirName, TranscriptName), 0o600)
				mode(filepath.Join(jobDir, TicketName), 0o600)
				data := staged(t, jobDir)
				if len(data) == 0 {
					data = transcriptBytes(time.Now())
				}
				stage(t, jobDir, append(data, entryLine("run")...))
				if res := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi}); !res.Promoted {
					t.Fatalf("promote %d: %+v", i, res)
				}
				mode(root, 0o700)
				mode(filepath.Join(root, testKey), 0o700)
				mode(filepath.Join(root, testKey, TranscriptName), 0o600)
				mode(filepath.Join(root, testKey, db.FileName), 0o600)
			}
		})
	}
}
