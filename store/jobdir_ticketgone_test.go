package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"sessdb/gates"
)

// A promote (TicketFromJobDir) whose job dir's ticket is, since it was
// read, gone or no ticket, where something is staged, is ErrJobDirBusy:
// a resolve removes the ticket before it stages, and one killed before
// its own ticket leaves its copy and none. So too a ticket replaced by
// bytes that are no ticket, or by a directory (ErrBadTicket, not a fault
// of the disk's), and a ticket gone where the staged name is no regular
// file: that is the other resolve's dir too, not this Session's run to
// refuse. The refusal keeps no descriptor of the staged file it opened,
// and names the ticket it had read: its id, or one from before the job
// contract.
func TestAPromoteWhoseTicketIsNoTicketSinceItWasReadIsBusy(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	old := fmt.Sprintf(`{"key":%q,"resume":false,"reason":"absent","bytes":0,"venue":"local","job_dir":"/run/jobs/old"}`, testKey)
	for _, c := range []struct {
		name   string
		old    bool // the ticket read is one from before the job contract
		change func(t *testing.T, jobDir string)
	}{
		{"replaced by bytes that are no ticket", false, func(t *testing.T, jobDir string) {
			must(t, os.WriteFile(filepath.Join(jobDir, TicketName), []byte("no ticket"), 0o600))
		}},
		{"an old ticket replaced by bytes that are no ticket", true, func(t *testing.T, jobDir string) {
			must(t, os.WriteFile(filepath.Join(jobDir, TicketName), []byte("no ticket"), 0o600))
		}},
		{"replaced by a directory", false, func(t *testing.T, jobDir string) {
			must(t, os.Remove(filepath.Join(jobDir, TicketName)))
			must(t, os.Mkdir(filepath.Join(jobDir, TicketName), 0o700))
		}},
		{"removed, a link staged", false, func(t *testing.T, jobDir string) {
			must(t, os.Remove(filepath.Join(jobDir, TicketName)))
			p := filepath.Join(jobDir, StagedDirName, TranscriptName)
			must(t, os.Rename(p, p+".run"))
			must(t, os.Symlink(TranscriptName+".run", p))
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			jobDir := t.TempDir()
			if c.old {
				stage(t, jobDir, transcriptBytes(testClockStart, "the run"))
				must(t, os.WriteFile(filepath.Join(jobDir, TicketName), []byte(old), 0o600))
			} else {
				_, jobDir = mustResolve(t, s, testKey, localJob())
				stage(t, jobDir, transcriptBytes(testClockStart, "the run"))
			}
			sess, err := ReadTicket(jobDir)
			if err != nil {
				t.Fatal(err)
			}
			c.change(t, jobDir)
			fds := openFDs(t)
			res, err := s.Promote(sess, PromoteRequest{PiVersion: testPi, TicketFromJobDir: true})
			if res.Promoted || !errors.Is(err, ErrJobDirBusy) {
				t.Fatalf("promote of a ticket since %s: %+v, %v; want ErrJobDirBusy", c.name, res, err)
			}
			if n := openFDs(t); n != fds {
				t.Errorf("the refused promote left %d descriptors open, had %d", n, fds)
			}
			read := "ticket " + sess.Ticket + " was read"
			if c.old {
				read = "from before the job contract"
			}
			if !strings.Contains(err.Error(), read) {
				t.Errorf("the refusal: %v; want it to name the ticket read (%q)", err, read)
			}
		})
	}
}

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
	sf, reason, err := s.openStaged(jobDir, true, sess.Ticket)
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
		sf, reason, err := s.openStaged(jobDir, true, sess.Ticket)
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
