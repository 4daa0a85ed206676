package fleet

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"sessdb/fleet/etcdmeta"
	"sessdb/gates"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// fixture is one fleet (a prefix, a transcripts dir) on a cluster, with a
// store on it.
type fixture struct {
	t      *testing.T
	c      *etcdtest.Cluster
	prefix string
	dir    string
	b      *Backend
	s      *store.Store
	now    time.Time // the store's clock; zero means the wall clock
}

func newFixture(t *testing.T, c *etcdtest.Cluster, edit ...func(*Config)) *fixture {
	f := &fixture{t: t, c: c, prefix: "/sessdb/" + randHex(8), dir: t.TempDir()}
	f.b = f.open(edit...)
	f.s = store.NewOn(f.b, store.Options{Now: f.clock, Bounds: gates.Bounds{TTL: 14 * 24 * time.Hour}})
	return f
}

// open opens another Backend on the fixture's fleet.
func (f *fixture) open(edit ...func(*Config)) *Backend {
	cfg := Config{Config: etcdmeta.Config{Endpoints: f.c.Endpoints(), Prefix: f.prefix, RequestTimeout: 10 * time.Second}, TranscriptsDir: f.dir, Now: f.clock}
	for _, e := range edit {
		e(&cfg)
	}
	b, err := Open(cfg)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { b.Close() })
	return b
}

func (f *fixture) clock() time.Time {
	if f.now.IsZero() {
		return time.Now()
	}
	return f.now
}

var testJob = store.Job{PiVersion: "0.58.3", Venue: "local", Model: "anthropic/claude-sonnet-4-5"}

const testHeader = `{"type":"session","version":3,"id":"0b9c3f0e-1111-4a2b-8c3d-123456789abc","timestamp":"2026-11-01T12:00:00.000Z","cwd":"/workspace"}` + "\n"

func markerLine(marker string) string {
	return fmt.Sprintf(`{"type":"message","id":%q,"parentId":null,"timestamp":"2026-11-01T12:00:00.000Z","message":{"role":"user","content":%q}}`+"\n", marker, marker)
}

// markers returns the markers of a transcript's entries, in order.
func markers(data []byte) []string {
	var out []string
	for _, l := range bytes.Split(data, []byte("\n")) {
		if i := bytes.Index(l, []byte(`"content":"`)); i >= 0 {
			rest := l[i+len(`"content":"`):]
			out = append(out, string(rest[:bytes.IndexByte(rest, '"')]))
		}
	}
	return out
}

// resolve resolves key on s in a new job dir.
func resolveOn(t *testing.T, s *store.Store, key string) (store.Session, string) {
	t.Helper()
	jobDir := t.TempDir()
	sess, err := s.Resolve(key, testJob, jobDir)
	if err != nil {
		t.Fatalf("resolve: %v", err)
	}
	return sess, jobDir
}

// appendMarker appends marker to what the job was handed (or to a fresh
// header).
func appendMarker(t *testing.T, jobDir, marker string) {
	t.Helper()
	p := filepath.Join(jobDir, store.StagedDirName, store.TranscriptName)
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) == 0 {
		data = []byte(testHeader)
	}
	if err := os.WriteFile(p, append(data, markerLine(marker)...), 0o600); err != nil {
		t.Fatal(err)
	}
}

func stagedOf(t *testing.T, jobDir string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(jobDir, store.StagedDirName, store.TranscriptName))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// job resolves key and stages marker onto what it was handed.
func (f *fixture) job(key, marker string) (store.Session, string) {
	f.t.Helper()
	sess, jobDir := resolveOn(f.t, f.s, key)
	appendMarker(f.t, jobDir, marker)
	return sess, jobDir
}

func (f *fixture) promote(sess store.Session) (store.PromoteResult, error) {
	return f.s.Promote(sess, store.PromoteRequest{PiVersion: testJob.PiVersion})
}

// run is a whole job that must promote.
func (f *fixture) run(key, marker string) store.PromoteResult {
	f.t.Helper()
	sess, _ := f.job(key, marker)
	res, err := f.promote(sess)
	if err != nil || !res.Promoted {
		f.t.Fatalf("promote %s: %+v, %v", marker, res, err)
	}
	return res
}

// marked has f's Backend claim its transcripts dir (the mark, the
// fleet's ID), as the fleet's first writer does before it writes there: a
// test that puts files in the dir by hand puts them in a dir so marked.
func (f *fixture) marked() {
	f.t.Helper()
	if err := f.b.Claim(context.Background()); err != nil {
		f.t.Fatal(err)
	}
}

// holds requires key to resume ending in marker, at gen.
func (f *fixture) holds(key, marker string, gen uint64) {
	f.t.Helper()
	sess, jobDir := resolveOn(f.t, f.s, key)
	m := markers(stagedOf(f.t, jobDir))
	if !sess.Resume || sess.Gen() != gen || len(m) == 0 || m[len(m)-1] != marker {
		f.t.Fatalf("key resumes %v at gen %d (%s), want %q at gen %d", m, sess.Gen(), sess.Reason, marker, gen)
	}
}

// files lists the key's files in the transcripts dir, as shared names
// them.
func (f *fixture) files(key string) []string {
	f.t.Helper()
	ents, err := os.ReadDir(filepath.Join(f.dir, key))
	if err != nil && !os.IsNotExist(err) {
		f.t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, key+"/"+e.Name())
	}
	sort.Strings(out)
	return out
}

// recordFile is the file key's record names ("" for none).
func (f *fixture) recordFile(key string) string {
	f.t.Helper()
	st, err := f.b.meta.GetRecord(context.Background(), key)
	if err != nil {
		f.t.Fatal(err)
	}
	if st.Record.Transcript == nil {
		return ""
	}
	return st.Record.Transcript.File
}

// waitUp waits until the fixture's backend reads from etcd again: a
// client reconnects to a restarted member after gRPC's backoff, which can
// outlast a short request timeout.
func (f *fixture) waitUp() {
	f.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		_, err := f.b.meta.GetRecord(context.Background(), "00000000000000000000000000000000")
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("etcd still unreadable a minute after the restart: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// reapAt has f's Backend reap key (expired by a clock two days on) the
// first time its hook passes point for key, which then returns ret (the
// tests' stand-in for reads that fail on a file another host removed).
// It reports whether the reap ran.
func (f *fixture) reapAt(key, point string, ret error) (reaped *bool) {
	f.t.Helper()
	reaped = new(bool)
	f.b.hook = func(p, k string) error {
		if p != point || k != key || *reaped {
			return nil
		}
		*reaped = true
		res, err := f.b.Reap(context.Background(), ReapOptions{TTL: time.Hour, Now: func() time.Time { return time.Now().Add(48 * time.Hour) }})
		if err != nil || len(res.Removed) != 1 {
			f.t.Errorf("reap: %+v, %v", res, err)
		}
		return ret
	}
	return reaped
}
