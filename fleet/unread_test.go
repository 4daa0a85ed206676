package fleet

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"sessdb/internal/etcdtest"
	"sessdb/internal/faults"
	"sessdb/store"
)

// A generation whose fstat, first line or copy cannot be read while the
// file is still at its name (a soft mount's EIO after its timeout, the
// process out of descriptors) says nothing about the key: resolve fails
// with the read's error (a fault, exit 1: no ticket), and once the reads
// work again the key resumes what it held. It was transcript-replaced on
// the record's base, so the job's cold run was promoted over the whole
// conversation.
func TestAGenerationNotReadButStillThereIsAFault(t *testing.T) {
	f := newFixture(t, etcdtest.Start1(t))
	for _, c := range []struct {
		name string
		arm  func() (disarm func())
	}{
		{"at its fstat", func() func() {
			statGeneration = func(g *os.File) (os.FileInfo, error) {
				return nil, &os.PathError{Op: "stat", Path: g.Name(), Err: unix.EIO}
			}
			return func() { statGeneration = (*os.File).Stat }
		}},
		{"at its first line", func() func() {
			f.b.hook = func(p, _ string) error {
				if p == hookHeader {
					return errors.New("eio") // the file is closed: its reads fail
				}
				return nil
			}
			return func() { f.b.hook = nil }
		}},
		{"under the copy", func() func() {
			f.b.hook = func(p, _ string) error {
				if p == hookSource {
					return errors.New("eio")
				}
				return nil
			}
			return func() { f.b.hook = nil }
		}},
	} {
		key := store.Key("github", "unread", c.name)
		f.run(key, "one")
		disarm := c.arm()
		sess, err := f.s.Resolve(key, testJob, t.TempDir())
		disarm()
		if err == nil {
			t.Errorf("%s: resolve = %+v, no error; want the read's failure", c.name, sess)
		}
		sess, jobDir := resolveOn(t, f.s, key)
		if got := markers(stagedOf(t, jobDir)); !sess.Resume || sess.Gen() != 1 || len(got) == 0 || got[len(got)-1] != "one" {
			t.Errorf("%s: then resolve = %+v, staged %v; want gen 1 resumed", c.name, sess, got)
		}
	}
}

// A resolve whose read of the generation's first line fails (EIO, the
// file still there) is a fault, and leaves no descriptor of the generation
// open: the view it opened is closed with the error (before: View returned
// the error and dropped the view with the file open, one descriptor per
// such resolve until a garbage collection, in a long-lived process).
func TestAGenerationNotReadAtItsFirstLineIsClosed(t *testing.T) {
	f := newFixture(t, etcdtest.Start1(t))
	key := store.Key("github", "unread", "closed")
	f.run(key, "one")
	path, err := filepath.EvalSymlinks(filepath.Join(f.dir, f.recordFile(key)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { faults.Set(nil) })
	faults.Set(func(p faults.Point) error {
		if p == faults.TranscriptHeaderRead {
			return unix.EIO
		}
		return nil
	})
	if sess, err := f.s.Resolve(key, testJob, t.TempDir()); !errors.Is(err, unix.EIO) {
		t.Fatalf("resolve = %+v, %v; want the read's EIO", sess, err)
	}
	faults.Set(nil)
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	for _, fd := range fds {
		if target, _ := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); target == path {
			t.Fatalf("descriptor %s still has the generation %s open", fd.Name(), path)
		}
	}
}
