package store

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sessdb/gates"
)

const testPi = "0.58.3"

var testKey = Key("github", "acme/widget", "pi/issue-1")

// testClock is a settable clock for a store under test.
type testClock struct{ now time.Time }

func (c *testClock) Now() time.Time { return c.now }

func newTestStore(t *testing.T, b gates.Bounds) (*Store, string, *testClock) {
	t.Helper()
	return newTestStoreAt(t, filepath.Join(t.TempDir(), "sessions"), b)
}

// newTestStoreAt is newTestStore with its root at root.
func newTestStoreAt(t *testing.T, root string, b gates.Bounds) (*Store, string, *testClock) {
	t.Helper()
	clock := &testClock{now: time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)}
	s, err := New(root, Options{Bounds: b, Now: clock.Now, LockTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return s, root, clock
}

func localJob() Job {
	return Job{PiVersion: testPi, Venue: "local", Model: "anthropic/claude-sonnet-4-5"}
}

// transcriptBytes is a small pi transcript: a header created at created,
// the model it runs (testModel), then one entry per body line.
func transcriptBytes(created time.Time, body ...string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"type":"session","version":3,"id":"0b9c3f0e-1111-4a2b-8c3d-123456789abc","timestamp":%q,"cwd":"/workspace"}`+"\n", created.UTC().Format("2006-01-02T15:04:05.000Z"))
	// pi records the model it starts with; the reading a promotion stores
	// is stamped with it.
	b.WriteString(`{"type":"model_change","id":"mc000001","parentId":null,"timestamp":"2026-11-01T12:00:00.000Z","provider":"anthropic","modelId":"claude-sonnet-4-5"}` + "\n")
	for _, line := range body {
		b.WriteString(entryLine(line))
	}
	return b.Bytes()
}

// entryLine is one user message entry carrying text, a child of the
// model change transcriptBytes writes: the branch pi reads from the last
// of them is that model change and that entry.
func entryLine(text string) string {
	return fmt.Sprintf(`{"type":"message","id":"00000001","parentId":"mc000001","timestamp":"2026-11-01T12:00:00.000Z","message":{"role":"user","content":%q}}`+"\n", text)
}

func stage(t *testing.T, jobDir string, data []byte) {
	t.Helper()
	dir := filepath.Join(jobDir, StagedDirName)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, TranscriptName)
	os.Remove(p)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func staged(t *testing.T, jobDir string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(jobDir, StagedDirName, TranscriptName))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustResolve(t *testing.T, s *Store, key string, job Job) (Session, string) {
	t.Helper()
	jobDir := t.TempDir()
	sess, err := s.Resolve(key, job, jobDir)
	if err != nil {
		t.Fatalf("resolve: %v", err)
	}
	got := staged(t, jobDir)
	if !sess.Resume && len(got) != 0 {
		t.Fatalf("cold start %s staged %d bytes, want 0", sess.Reason, len(got))
	}
	if sess.Resume && int64(len(got)) != sess.Bytes {
		t.Fatalf("resumed %d bytes but staged %d", sess.Bytes, len(got))
	}
	return sess, jobDir
}

func mustPromote(t *testing.T, s *Store, sess Session, req PromoteRequest) PromoteResult {
	t.Helper()
	res, err := s.Promote(sess, req)
	if err != nil {
		t.Fatalf("promote: %v", err)
	}
	return res
}

// runJob is one whole job on key: resolve, then the run appends a line to
// whatever it was handed (or starts a transcript), then promote.
func runJob(t *testing.T, s *Store, key string, job Job, req PromoteRequest, line string) (Session, PromoteResult) {
	t.Helper()
	sess, jobDir := mustResolve(t, s, key, job)
	data := staged(t, jobDir)
	if len(data) == 0 {
		data = transcriptBytes(s.opts.Now())
	}
	data = append(data, entryLine(line)...)
	stage(t, jobDir, data)
	if req.PiVersion == "" {
		req.PiVersion = job.PiVersion
	}
	res := mustPromote(t, s, sess, req)
	if !res.Promoted {
		t.Fatalf("promote %q: %s", line, res.Reason)
	}
	return sess, res
}

func want(t *testing.T, sess Session, resume bool, reason gates.Reason) {
	t.Helper()
	if sess.Resume != resume || sess.Reason != reason {
		t.Fatalf("resolve = {resume %v, %s}, want {resume %v, %s}", sess.Resume, sess.Reason, resume, reason)
	}
}

func keyDirPath(root, key string) string { return filepath.Join(root, key) }

func readCanonical(t *testing.T, root, key string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, key, TranscriptName))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// treeState records every path under dir with its mode, size, mtime and
// content, so a test can prove an operation touched nothing.
func treeState(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			fmt.Fprintf(&b, "%s err %v\n", p, err)
			return nil
		}
		fmt.Fprintf(&b, "%s %v %d %d", p, fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		if fi.Mode().IsRegular() {
			c, _ := os.ReadFile(p)
			fmt.Fprintf(&b, " %x", c)
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			l, _ := os.Readlink(p)
			fmt.Fprintf(&b, " -> %s", l)
		}
		b.WriteByte('\n')
		return nil
	})
	return b.String()
}
