package store

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"sessdb/db"
	"sessdb/gates"
)

// What a job is handed and what the store keeps are the worker's alone,
// whatever the process's umask: the session dir 0700 and the staged file
// 0600 (so the container must run as the worker's uid, as README says),
// the ticket 0600 (docs/on-disk.md), and in the key dir 0700 the
// transcript and meta.db 0600. A cold start and a resume each.
func TestModesArePrivateWhateverTheUmask(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	s, root, _ := newTestStore(t, gates.Bounds{})
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
		sess, jobDir := mustResolve(t, s, testKey, localJob())
		want(t, sess, resume, map[bool]gates.Reason{false: gates.Absent, true: gates.Resumed}[resume])
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
}
