package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// A promote while a resolve in the same job dir is staging is refused
// with the line job.md promises ("another resolve or promote is using the
// job dir"), not as a job dir that was never resolved: that resolve
// removed the ticket before its copy and writes its own after it, so the
// promote found no ticket and said only "no such file or directory"
// (exit 1), which a worker reads as a resolve that failed.
func TestAPromoteWhileAResolveStagesSaysTheJobDirIsBusy(t *testing.T) {
	clearEnv(t)
	root := filepath.Join(t.TempDir(), "sessions")
	job := filepath.Join(t.TempDir(), "job")
	if code, _, errs := runCLI(t, "resolve", "--sessions-dir", root, "--kind", "github", "--repo", "acme/widget", "--ref", "pi/staging", "--job-dir", job, "--pi-version", "0.58.3"); code != exitOK {
		t.Fatalf("resolve: exit %d: %s", code, errs)
	}
	// A second resolve, as it stands between its removal of the ticket
	// and its own: the staged dir's flock held, no ticket.
	if err := os.Remove(filepath.Join(job, "session.ticket")); err != nil {
		t.Fatal(err)
	}
	sd, err := os.Open(filepath.Join(job, "session"))
	if err != nil {
		t.Fatal(err)
	}
	defer sd.Close()
	if err := unix.Flock(int(sd.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, "promote", "--sessions-dir", root, "--job-dir", job, "--pi-version", "0.58.3")
	if code != exitFault || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "another resolve or promote is using the job dir") {
		t.Errorf("promote while a resolve stages: exit %d, stdout %q, stderr %q; want exit 1 and one line saying the job dir is busy", code, out, errs)
	}
	// Once it is done (here: gone, its ticket never written), no ticket
	// is no ticket, not a busy dir.
	if err := unix.Flock(int(sd.Fd()), unix.LOCK_UN); err != nil {
		t.Fatal(err)
	}
	code, out, errs = runCLI(t, "promote", "--sessions-dir", root, "--job-dir", job, "--pi-version", "0.58.3")
	if code != exitFault || out != "" || strings.Contains(errs, "busy") || strings.Contains(errs, "another resolve") || !strings.Contains(errs, "no such file or directory") {
		t.Errorf("promote with no ticket, nothing staging: exit %d, stdout %q, stderr %q; want exit 1 saying the ticket is missing", code, out, errs)
	}
}
