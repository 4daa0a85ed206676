package store

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"

	"sessdb/gates"
)

// A ticket that cannot be read again under the staged dir's lock, for a
// reason other than its being gone or no ticket (a permission here; an
// I/O error), is a fault: the promote cannot tell whether the job dir was
// resolved again since, and promotes nothing. Read by a thread whose
// file-system uid is nobody's (setfsuid: its own thread only), the job
// dir and the staged file readable and the ticket not.
func TestAPromoteWhoseTicketCannotBeReadAgainIsAFault(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to read as another uid")
	}
	const nobody = 65534
	s, _, _ := newTestStore(t, gates.Bounds{})
	_, jobDir := mustResolve(t, s, testKey, localJob())
	stage(t, jobDir, transcriptBytes(testClockStart, "the run"))
	for _, p := range []string{filepath.Dir(jobDir), jobDir, filepath.Join(jobDir, StagedDirName)} {
		must(t, os.Chmod(p, 0o755))
	}
	must(t, os.Chmod(filepath.Join(jobDir, StagedDirName, TranscriptName), 0o644))
	sess, err := ReadTicket(jobDir)
	if err != nil {
		t.Fatal(err)
	}
	// Read by root, the ticket is read again and the staged file opened.
	sf, reason, err := s.openStaged(jobDir, true, sess.Ticket, sess.Key)
	if err != nil || reason != "" {
		t.Fatalf("openStaged as root: %q, %v; want the staged file", reason, err)
	}
	sf.close()
	type opened struct {
		sf     stagedFile
		reason gates.Reason
		err    error
	}
	ch := make(chan opened)
	go func() {
		// Never unlocked: the thread, its fsuid changed, ends with this
		// goroutine.
		runtime.LockOSThread()
		unix.SetfsuidRetUid(nobody)
		if now, _ := unix.SetfsuidRetUid(-1); now != nobody {
			ch <- opened{err: errors.New("setfsuid refused")}
			return
		}
		sf, reason, err := s.openStaged(jobDir, true, sess.Ticket, sess.Key)
		ch <- opened{sf, reason, err}
	}()
	got := <-ch
	if got.err == nil {
		got.sf.close()
	}
	if got.reason != "" || !errors.Is(got.err, fs.ErrPermission) || errors.Is(got.err, ErrJobDirBusy) {
		t.Errorf("openStaged of a job dir whose ticket cannot be read: %q, %v; want a fault, permission denied", got.reason, got.err)
	}
}
