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

// Everything a container or a stranger can plant must get its reason and
// touch nothing: no read through a link, no write through a link, no hang
// on a FIFO.

func TestSymlinkedKeyDirIsNeverFollowed(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	// A real key elsewhere, with a resumable transcript.
	other := Key("github", "victim/repo", "main")
	runJob(t, s, other, localJob(), PromoteRequest{}, "secret")
	if err := os.Symlink(filepath.Join(root, other), filepath.Join(root, testKey)); err != nil {
		t.Fatal(err)
	}
	before := treeState(t, root)
	sess, _ := mustResolve(t, s, testKey, localJob())
	want(t, sess, false, gates.NotARegularFile)

	cold, jobDir := mustResolve(t, s, Key("github", "x/y", "z"), localJob())
	cold.Key = testKey
	stage(t, jobDir, transcriptBytes(s.opts.Now(), "attacker"))
	res := mustPromote(t, s, cold, PromoteRequest{PiVersion: testPi})
	if res.Promoted || res.Reason != gates.NotARegularFile {
		t.Fatalf("promote through a symlinked key dir = %+v", res)
	}
	if after := treeState(t, root); after != before {
		t.Fatalf("the store changed:\n%s\n---\n%s", before, after)
	}
}

func TestSymlinkedTranscriptIsNotARegularFile(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "a")
	secret := filepath.Join(t.TempDir(), "secret.jsonl")
	os.WriteFile(secret, transcriptBytes(s.opts.Now(), "host secret"), 0o600)
	p := filepath.Join(root, testKey, TranscriptName)
	os.Remove(p)
	os.Symlink(secret, p)
	sess, _ := mustResolve(t, s, testKey, localJob())
	want(t, sess, false, gates.NotARegularFile)
}

func TestFIFOTranscriptDoesNotHang(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "a")
	p := filepath.Join(root, testKey, TranscriptName)
	os.Remove(p)
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan Session, 1)
	go func() { sess, _ := mustResolve(t, s, testKey, localJob()); done <- sess }()
	select {
	case sess := <-done:
		want(t, sess, false, gates.NotARegularFile)
	case <-time.After(10 * time.Second):
		t.Fatal("resolve hung on a FIFO transcript")
	}
}

func TestHostileStagedFiles(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "host-file")
	secretBytes := transcriptBytes(time.Now(), "host secret")
	os.WriteFile(secret, secretBytes, 0o600)
	cases := []struct {
		name   string
		plant  func(t *testing.T, p string)
		reason gates.Reason
	}{
		{"missing", func(t *testing.T, p string) { os.Remove(p) }, gates.Absent},
		{"empty", func(t *testing.T, p string) { os.WriteFile(p, nil, 0o600) }, gates.Absent},
		{"symlink to a host file", func(t *testing.T, p string) { os.Remove(p); os.Symlink(secret, p) }, gates.NotARegularFile},
		{"dangling symlink", func(t *testing.T, p string) { os.Remove(p); os.Symlink("/nonexistent", p) }, gates.NotARegularFile},
		{"FIFO", func(t *testing.T, p string) { os.Remove(p); syscall.Mkfifo(p, 0o600) }, gates.NotARegularFile},
		{"directory", func(t *testing.T, p string) { os.Remove(p); os.Mkdir(p, 0o700) }, gates.NotARegularFile},
		{"oversized", func(t *testing.T, p string) {
			os.WriteFile(p, append(transcriptBytes(time.Now()), make([]byte, 2048)...), 0o600)
		}, gates.TooLarge},
		{"one byte over once its newline is added", func(t *testing.T, p string) {
			b := transcriptBytes(time.Now())
			b = append(b, make([]byte, 1024-len(b))...) // 1024 bytes, last byte not '\n'
			os.WriteFile(p, b, 0o600)
		}, gates.TooLarge},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, root, _ := newTestStore(t, gates.Bounds{MaxBytes: 1024})
			runJob(t, s, testKey, localJob(), PromoteRequest{}, "kept")
			sess, jobDir := mustResolve(t, s, testKey, localJob())
			c.plant(t, filepath.Join(jobDir, StagedDirName, TranscriptName))
			before := treeState(t, root)
			done := make(chan PromoteResult, 1)
			go func() { done <- mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi}) }()
			var res PromoteResult
			select {
			case res = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("promote hung")
			}
			if res.Promoted || res.Reason != c.reason {
				t.Fatalf("promote = %+v, want %s", res, c.reason)
			}
			if after := treeState(t, root); after != before {
				t.Fatalf("a refused promotion changed the store:\n%s\n---\n%s", before, after)
			}
			if b, _ := os.ReadFile(secret); string(b) != string(secretBytes) {
				t.Fatal("the host file was written")
			}
		})
	}
}

func TestSymlinkedStagedDirIsRefused(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	elsewhere := t.TempDir()
	os.WriteFile(filepath.Join(elsewhere, TranscriptName), transcriptBytes(time.Now(), "x"), 0o600)
	os.RemoveAll(filepath.Join(jobDir, StagedDirName))
	os.Symlink(elsewhere, filepath.Join(jobDir, StagedDirName))
	res := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi})
	if res.Promoted || res.Reason != gates.NotARegularFile {
		t.Fatalf("promote from a symlinked session dir = %+v", res)
	}
	if _, err := os.Stat(root); !os.IsNotExist(err) {
		t.Error("a refused promotion created the store")
	}
}

func TestDamagedMetaDBIsMetaUnreadable(t *testing.T) {
	cases := map[string]func(t *testing.T, p string){
		"truncated": func(t *testing.T, p string) {
			if err := os.Truncate(p, metaPagesOf(t, p).HighWater()-1); err != nil {
				t.Fatal(err)
			}
		},
		"zero-length": func(t *testing.T, p string) { os.Truncate(p, 0) },
		"garbage": func(t *testing.T, p string) {
			b := make([]byte, 32<<10)
			for i := range b {
				b[i] = byte(i*7 + 3)
			}
			os.WriteFile(p, b, 0o600)
		},
		"symlink": func(t *testing.T, p string) {
			real := filepath.Join(t.TempDir(), "meta.db")
			b, _ := os.ReadFile(p)
			os.WriteFile(real, b, 0o600)
			os.Remove(p)
			os.Symlink(real, p)
		},
		"FIFO": func(t *testing.T, p string) { os.Remove(p); syscall.Mkfifo(p, 0o600) },
	}
	for name, damage := range cases {
		t.Run(name, func(t *testing.T) {
			s, root, _ := newTestStore(t, gates.Bounds{})
			for i := 0; i < 20; i++ { // enough history to grow the file past its first pages
				runJob(t, s, testKey, localJob(), PromoteRequest{Tokens: tok(int64(i)), Window: 100}, "padding padding padding")
			}
			damage(t, filepath.Join(root, testKey, db.FileName))
			sess, _ := mustResolve(t, s, testKey, localJob())
			want(t, sess, false, gates.MetaUnreadable)
			var reports []KeyReport
			if err := s.Inspect(3, func(r KeyReport) error { reports = append(reports, r); return nil }); err != nil {
				t.Fatal(err)
			}
			if len(reports) != 1 || reports[0].MetaError == "" {
				t.Fatalf("dump does not report the damage: %+v", reports)
			}
		})
	}
}

// A socket at current.jsonl is a cold start named not-a-regular-file, as
// a FIFO or a link is, and dump gives the same verdict. It was a fault:
// the open of a socket fails with ENXIO (so does a device's with no
// driver), and resolve returned that error, with no ticket, where the
// ladder's rung 2 names the key; dump reported a problem and no verdict.
// Now the name is lstat'ed first and nothing but a regular file is opened.
func TestSocketTranscriptIsNotARegularFile(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "a")
	p := filepath.Join(root, testKey, TranscriptName)
	os.Remove(p)
	if err := syscall.Mknod(p, syscall.S_IFSOCK|0o600, 0); err != nil {
		t.Fatal(err)
	}
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	want(t, sess, false, gates.NotARegularFile)
	if _, err := ReadTicket(jobDir); err != nil {
		t.Fatalf("no ticket for the cold start: %v", err)
	}
	var reports []KeyReport
	if err := s.Inspect(0, func(r KeyReport) error { reports = append(reports, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(reports) != 1 || reports[0].Verdict == nil || reports[0].Verdict.Reason != string(gates.NotARegularFile) {
		t.Fatalf("dump = %+v", reports)
	}
}
