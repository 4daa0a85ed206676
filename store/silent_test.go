package store

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"sessdb/gates"
)

// The library logs only through the Logger it is given, silent by default,
// and never through zerolog's globals (issue 2): a worker that embeds it
// owns its stderr. Every event the store logs is provoked here with the
// zero Options (a fault at Error, a removal at Info) while the process's
// own stdout and stderr descriptors point at a file, so a write through
// any logger, global or made on os.Stderr at init, is caught.
func TestLibraryIsSilentByDefault(t *testing.T) {
	level := zerolog.GlobalLevel()
	root := filepath.Join(t.TempDir(), "sessions")
	s, err := New(root, Options{Bounds: gates.Bounds{TTL: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	capture, err := os.CreateTemp(t.TempDir(), "fd")
	if err != nil {
		t.Fatal(err)
	}
	// Closed, not left to the GC: its finalizer closing it during a later
	// test's lowered RLIMIT_NOFILE gave that test a descriptor.
	defer capture.Close()
	restore := redirect(t, capture, 1, 2)

	jobDir := t.TempDir()
	sess, rerr := s.Resolve(testKey, localJob(), jobDir)
	stage(t, jobDir, transcriptBytes(time.Now(), "a"))
	res, perr := s.Promote(sess, PromoteRequest{PiVersion: testPi})
	// A refusal: the next run appended nothing, and an answer is required.
	jobDir2 := t.TempDir()
	sess2, rerr2 := s.Resolve(testKey, localJob(), jobDir2)
	stage(t, jobDir2, staged(t, jobDir2))
	refused, rferr := s.Promote(sess2, PromoteRequest{PiVersion: testPi, Require: "answered"})
	// Two faults: a job dir whose parent is missing, and a promotion into
	// a meta.db of 0 bytes.
	_, ferr := s.Resolve(testKey, localJob(), filepath.Join(t.TempDir(), "no", "such", "parent"))
	other := Key("github", "acme/other", "main")
	jobDir3 := t.TempDir()
	sess3, rerr3 := s.Resolve(other, localJob(), jobDir3)
	stage(t, jobDir3, transcriptBytes(time.Now(), "b"))
	werr := os.Mkdir(filepath.Join(root, other), 0o700)
	if werr == nil {
		werr = os.WriteFile(filepath.Join(root, other, "meta.db"), nil, 0o600)
	}
	failed, ffail := s.Promote(sess3, PromoteRequest{PiVersion: testPi})
	// A reap that removes the first key.
	s.opts.Now = func() time.Time { return time.Now().Add(48 * time.Hour) }
	reaped, reerr := s.Reap(false)

	restore()
	for _, err := range []error{rerr, perr, rerr2, rferr, rerr3, reerr} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if !res.Promoted || refused.Reason != gates.RunIncomplete || ferr == nil || failed.Reason != gates.PromoteFailed || ffail == nil || len(reaped.Removed) == 0 {
		t.Fatalf("the events were not provoked: promote %+v, refusal %+v, resolve into a missing parent %v, promote into an empty meta.db %+v %v (%v), reap %+v",
			res, refused, ferr, failed, ffail, werr, reaped)
	}
	if out, _ := os.ReadFile(capture.Name()); len(out) != 0 {
		t.Errorf("the store wrote on stdout or stderr with no Logger given:\n%s", out)
	}
	if zerolog.GlobalLevel() != level {
		t.Errorf("zerolog's global level changed from %v to %v", level, zerolog.GlobalLevel())
	}
}

// redirect points the descriptors fds at f until the returned func puts
// them back, or the test ends: a helper that fails the test in between
// must not leave every later test's output in f.
func redirect(t *testing.T, f *os.File, fds ...int) func() {
	t.Helper()
	var saved []int
	var once sync.Once
	restore := func() {
		once.Do(func() {
			for i, d := range saved {
				unix.Dup2(d, fds[i])
				unix.Close(d)
			}
		})
	}
	t.Cleanup(restore)
	for _, fd := range fds {
		d, err := unix.Dup(fd)
		if err != nil {
			t.Fatal(err)
		}
		saved = append(saved, d)
		if err := unix.Dup2(int(f.Fd()), fd); err != nil {
			t.Fatal(err)
		}
	}
	return restore
}
