package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
