package store

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"sessdb/gates"
	"sessdb/internal/testfs"
)

// The job dir is foreign ground (issue 15, items 1, 2 and 7): whatever the
// job's container or a stale run left there, resolve writes nothing through
// it, and promote believes no ticket it cannot read safely.

// victim promotes a transcript for another key and returns the path of
// that key's transcript and its bytes.
func victim(t *testing.T, s *Store, root string) (string, []byte) {
	t.Helper()
	other := Key("github", "victim/repo", "main")
	runJob(t, s, other, localJob(), PromoteRequest{}, "the victim's work")
	p := filepath.Join(root, other, TranscriptName)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return p, b
}

func TestResolveNeverDeletesThroughASymlinkedSessionDir(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	victimPath, victimBytes := victim(t, s, root)
	jobDir := t.TempDir()
	if err := os.Symlink(filepath.Dir(victimPath), filepath.Join(jobDir, StagedDirName)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Resolve(testKey, localJob(), jobDir); err == nil {
		t.Fatal("resolve staged into a symlinked session dir")
	}
	if b, err := os.ReadFile(victimPath); err != nil || !bytes.Equal(b, victimBytes) {
		t.Fatalf("the other key's transcript was touched: %v, %d bytes", err, len(b))
	}
	if _, err := os.Lstat(filepath.Join(jobDir, TicketName)); !os.IsNotExist(err) {
		t.Fatalf("a failed resolve left a ticket: %v", err)
	}
}

func TestResolveNeverTruncatesThroughAHardLink(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	victimPath, victimBytes := victim(t, s, root)
	jobDir := t.TempDir()
	os.Mkdir(filepath.Join(jobDir, StagedDirName), 0o700)
	stagedPath := filepath.Join(jobDir, StagedDirName, TranscriptName)
	if err := os.Link(victimPath, stagedPath); err != nil {
		t.Skipf("cannot hard-link across these temp dirs: %v", err)
	}
	sess, err := s.Resolve(testKey, localJob(), jobDir)
	if err != nil {
		t.Fatal(err)
	}
	want(t, sess, false, gates.Absent)
	if b, err := os.ReadFile(victimPath); err != nil || !bytes.Equal(b, victimBytes) {
		t.Fatalf("the hard-linked transcript was truncated: %v, %d bytes left of %d", err, len(b), len(victimBytes))
	}
	var vst, sst syscall.Stat_t
	syscall.Stat(victimPath, &vst)
	syscall.Stat(stagedPath, &sst)
	if vst.Ino == sst.Ino || sst.Size != 0 || sst.Nlink != 1 {
		t.Fatalf("the staged file is not a fresh empty file: ino %d (victim %d), %d bytes, %d links", sst.Ino, vst.Ino, sst.Size, sst.Nlink)
	}
}

func TestResolveReplacesASymlinkAtTheStagedName(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	victimPath, victimBytes := victim(t, s, root)
	jobDir := t.TempDir()
	os.Mkdir(filepath.Join(jobDir, StagedDirName), 0o700)
	stagedPath := filepath.Join(jobDir, StagedDirName, TranscriptName)
	os.Symlink(victimPath, stagedPath)
	if _, err := s.Resolve(testKey, localJob(), jobDir); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victimPath); !bytes.Equal(b, victimBytes) {
		t.Fatal("resolve wrote through the link")
	}
	if fi, err := os.Lstat(stagedPath); err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("the staged name is not a regular file: %v %v", fi, err)
	}
}

// A directory, a FIFO or a device at the staged name is not the store's to
// remove or to open: resolve refuses with a fault and writes nothing.
func TestResolveRefusesANonFileAtTheStagedName(t *testing.T) {
	cases := map[string]func(t *testing.T, p string){
		"directory": func(t *testing.T, p string) { os.Mkdir(p, 0o700) },
		"FIFO":      func(t *testing.T, p string) { syscall.Mkfifo(p, 0o600) },
		"character device": func(t *testing.T, p string) {
			// /dev/null's numbers: harmless even if it were opened.
			if err := testfs.MknodNull(p); err != nil {
				t.Skipf("mknod not permitted: %v", err)
			}
		},
	}
	for name, plant := range cases {
		t.Run(name, func(t *testing.T) {
			s, root, _ := newTestStore(t, gates.Bounds{})
			runJob(t, s, testKey, localJob(), PromoteRequest{}, "a")
			jobDir := t.TempDir()
			os.Mkdir(filepath.Join(jobDir, StagedDirName), 0o700)
			stagedPath := filepath.Join(jobDir, StagedDirName, TranscriptName)
			plant(t, stagedPath)
			before, jobBefore := treeState(t, root), treeState(t, jobDir)
			done := make(chan error, 1)
			go func() { _, err := s.Resolve(testKey, localJob(), jobDir); done <- err }()
			select {
			case err := <-done:
				if !errors.Is(err, ErrStagedNotFile) {
					t.Fatalf("resolve = %v, want ErrStagedNotFile", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("resolve hung")
			}
			if after := treeState(t, root); after != before {
				t.Fatal("a refused resolve changed the store")
			}
			if after := treeState(t, jobDir); after != jobBefore {
				t.Fatalf("a refused resolve changed the job dir:\n%s\n---\n%s", jobBefore, after)
			}
		})
	}
}

// A resolve that faults in a job dir used before leaves no ticket: the old
// one names another key, and promote would believe it.
func TestFailedResolveRemovesAnEarlierTicket(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	_, jobDir := mustResolve(t, s, Key("github", "a/b", "first"), localJob())
	if _, err := os.Stat(filepath.Join(jobDir, TicketName)); err != nil {
		t.Fatal(err)
	}
	stagedPath := filepath.Join(jobDir, StagedDirName, TranscriptName)
	os.Remove(stagedPath)
	os.Mkdir(stagedPath, 0o700) // makes the second resolve fault
	if _, err := s.Resolve(testKey, localJob(), jobDir); err == nil {
		t.Fatal("resolve did not fault")
	}
	if _, err := os.Lstat(filepath.Join(jobDir, TicketName)); !os.IsNotExist(err) {
		t.Fatalf("the earlier ticket survived a failed resolve: %v", err)
	}
}

func TestReadTicketRefusesWhatResolveCannotHaveWritten(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "shadow")
	os.WriteFile(secret, []byte("root:$6$SECRETHASH:19000:0:99999:7:::\n"), 0o600)
	cases := map[string]func(t *testing.T, p string){
		"FIFO":      func(t *testing.T, p string) { syscall.Mkfifo(p, 0o600) },
		"symlink":   func(t *testing.T, p string) { os.Symlink(secret, p) },
		"directory": func(t *testing.T, p string) { os.Mkdir(p, 0o700) },
		"oversized": func(t *testing.T, p string) { os.WriteFile(p, bytes.Repeat([]byte(" "), maxTicketBytes+1), 0o600) },
		"not JSON":  func(t *testing.T, p string) { os.WriteFile(p, []byte("SECRETHASH is not json"), 0o600) },
		// What a power cut leaves of a ticket whose data never reached the
		// disk before its rename did: nothing fsyncs it.
		"empty":  func(t *testing.T, p string) { os.WriteFile(p, nil, 0o600) },
		"zeroed": func(t *testing.T, p string) { os.WriteFile(p, make([]byte, 300), 0o600) },
		"bad key": func(t *testing.T, p string) {
			os.WriteFile(p, []byte(`{"key":"SECRETHASH","resume":false,"reason":"absent","bytes":0,"crc32c":"00000000","base":{},"venue":"local","job_dir":"/x"}`), 0o600)
		},
		"unknown field": func(t *testing.T, p string) {
			os.WriteFile(p, []byte(`{"key":"`+testKey+`","SECRETHASH":1}`), 0o600)
		},
		// A top-level gen is a ticket from before the job contract, which
		// has no ticket id.
		"gen beside a ticket id": func(t *testing.T, p string) {
			os.WriteFile(p, []byte(`{"ticket":"`+testKey+`","root":"/SECRETHASH","key":"`+testKey+`","gen":1}`), 0o600)
		},
		"trailing data": func(t *testing.T, p string) {
			os.WriteFile(p, []byte(`{"key":"`+testKey+`"} SECRETHASH`), 0o600)
		},
	}
	for name, plant := range cases {
		t.Run(name, func(t *testing.T) {
			jobDir := t.TempDir()
			plant(t, filepath.Join(jobDir, TicketName))
			done := make(chan error, 1)
			go func() { _, err := ReadTicket(jobDir); done <- err }()
			select {
			case err := <-done:
				if err == nil {
					t.Fatal("the ticket was accepted")
				}
				if strings.Contains(err.Error(), "SECRET") || strings.Contains(err.Error(), "root:") {
					t.Fatalf("the error quotes the file: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("ReadTicket hung")
			}
		})
	}
}

func TestTicketRoundTrip(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "a")
	sess, jobDir := mustResolve(t, s, testKey, Job{PiVersion: testPi, Venue: "local", Model: "anthropic/claude-sonnet-4-5", ID: "job-7"})
	got, err := ReadTicket(jobDir)
	if err != nil {
		t.Fatal(err)
	}
	if got != sess {
		t.Fatalf("ticket read back as\n%+v\nwant\n%+v", got, sess)
	}
	if !sess.Resume || sess.Base.Gen != 1 || !validTicketID(sess.Ticket) || !filepath.IsAbs(sess.Root) {
		t.Fatalf("ticket lacks its contract fields: %+v", sess)
	}
}

// A resolve whose staged dir cannot be made (a link, or a file, at its
// name: never followed, never removed) is a fault, and like every other
// fault leaves no ticket in the job dir, not even an earlier resolve's:
// the container and promote would take that one for this job's.
func TestAResolveWhoseStagedDirFailsRemovesAnEarlierTicket(t *testing.T) {
	for name, put := range map[string]func(t *testing.T, sd string){
		"a link": func(t *testing.T, sd string) {
			if err := os.Symlink(t.TempDir(), sd); err != nil {
				t.Fatal(err)
			}
		},
		"a file": func(t *testing.T, sd string) {
			if err := os.WriteFile(sd, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			s, _, _ := newTestStore(t, gates.Bounds{})
			_, jobDir := mustResolve(t, s, Key("github", "a/b", "first"), localJob())
			sd := filepath.Join(jobDir, StagedDirName)
			if err := os.RemoveAll(sd); err != nil {
				t.Fatal(err)
			}
			put(t, sd)
			if _, err := s.Resolve(testKey, localJob(), jobDir); err == nil {
				t.Fatalf("resolve with %s at the staged dir's name: no error; want a fault", name)
			}
			if _, err := os.Lstat(filepath.Join(jobDir, TicketName)); !os.IsNotExist(err) {
				t.Errorf("the earlier resolve's ticket after the failed resolve: %v; want it removed", err)
			}
		})
	}
}
