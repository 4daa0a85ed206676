package store

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"sessdb/gates"
)

// A job dir that is a file is refused with the system's own answer,
// naming it (not a later step's on a descriptor never opened), and the
// file is left as it was.
func TestAJobDirThatIsAFileIsRefusedByName(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	jobDir := filepath.Join(t.TempDir(), "job")
	if err := os.WriteFile(jobDir, []byte("not a dir\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := s.Resolve(testKey, localJob(), jobDir)
	if !errors.Is(err, syscall.ENOTDIR) || !strings.Contains(err.Error(), jobDir) {
		t.Fatalf("resolve = %v; want ENOTDIR naming %s", err, jobDir)
	}
	if b, err := os.ReadFile(jobDir); err != nil || !bytes.Equal(b, []byte("not a dir\n")) {
		t.Fatalf("the file is now %q, %v", b, err)
	}
}

// A staged dir that was there already, with a mode open to others (a job
// dir used before, a worker's own mkdir), is made 0700 by the resolve
// that stages into it: the staged file may be a conversation.
func TestAStagedDirThereAlreadyIsMadePrivate(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "a")
	jobDir := t.TempDir()
	sd := filepath.Join(jobDir, StagedDirName)
	if err := os.Mkdir(sd, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(sd, 0o777); err != nil {
		t.Fatal(err)
	}
	sess, err := s.Resolve(testKey, localJob(), jobDir)
	if err != nil {
		t.Fatal(err)
	}
	want(t, sess, true, gates.Resumed)
	if fi, err := os.Lstat(sd); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("the staged dir: %v, %v; want mode 0700", fi.Mode(), err)
	}
}
