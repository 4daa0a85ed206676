package fleet

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/faults"
	"sessdb/migrate"
	"sessdb/store"
)

// migNow is the clock of every store and migration in these tests.
var migNow = time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)

const migPi, migModel = "0.58.3", "anthropic/claude-sonnet-4-5"

// hostCase is one entry of a single-host root built for these tests, and
// what ToEtcd makes of it.
type hostCase struct {
	name string
	key  string
	// to is ToEtcd's action; a key that does not move has why, which says
	// what the fleet answers for it instead (absent: no record).
	to  migrate.Action
	why string
}

// convo is a transcript like pi's: a header created at created, the model
// change pi records at its start, then one user entry per line.
func convo(created time.Time, lines ...string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"type":"session","version":3,"id":"0b9c3f0e-1111-4a2b-8c3d-123456789abc","timestamp":%q,"cwd":"/workspace"}`+"\n", created.UTC().Format("2006-01-02T15:04:05.000Z"))
	b.WriteString(`{"type":"model_change","id":"mc000001","parentId":null,"timestamp":"2026-11-01T12:00:00.000Z","provider":"anthropic","modelId":"claude-sonnet-4-5"}` + "\n")
	for _, l := range lines {
		b.WriteString(markerLine(l))
	}
	return b.Bytes()
}

// hostBuilder promotes jobs into a single-host root with a settable clock.
type hostBuilder struct {
	t    *testing.T
	root string
	now  time.Time
	s    *store.Store
}

func newHostBuilder(t *testing.T, root string) *hostBuilder {
	h := &hostBuilder{t: t, root: root, now: migNow.Add(-time.Hour)}
	s, err := store.New(root, store.Options{Now: func() time.Time { return h.now }})
	if err != nil {
		t.Fatal(err)
	}
	h.s = s
	return h
}

// promote runs one job on key: resolved as job, its staged file what it
// was handed (or, cold, a fresh conversation created at created) plus
// marker, promoted with req. It returns Promote's result and error.
func (h *hostBuilder) promote(key string, job store.Job, created time.Time, marker string, req store.PromoteRequest) (store.PromoteResult, error) {
	h.t.Helper()
	jobDir := h.t.TempDir()
	sess, err := h.s.Resolve(key, job, jobDir)
	if err != nil {
		h.t.Fatal(err)
	}
	data := stagedOf(h.t, jobDir)
	if len(data) == 0 {
		data = convo(created)
	}
	if err := os.WriteFile(filepath.Join(jobDir, store.StagedDirName, store.TranscriptName), append(data, markerLine(marker)...), 0o600); err != nil {
		h.t.Fatal(err)
	}
	if req.PiVersion == "" {
		req.PiVersion = job.PiVersion
	}
	return h.s.Promote(sess, req)
}

func (h *hostBuilder) mustPromote(key string, job store.Job, marker string, req store.PromoteRequest) {
	h.t.Helper()
	if res, err := h.promote(key, job, migNow.Add(-48*time.Hour), marker, req); err != nil || !res.Promoted {
		h.t.Fatalf("promote %s: %+v, %v", marker, res, err)
	}
}

// crashAfterCommit promotes with the process "dying" between the commit
// and the rename: the fault point fails the promotion there, which leaves
// the pending entry and its temp as a kill would.
func (h *hostBuilder) crashAfterCommit(key string, job store.Job, marker string) {
	h.t.Helper()
	faults.Set(func(p faults.Point) error {
		if p == faults.PromoteAfterCommit {
			return errors.New("killed after the commit")
		}
		return nil
	})
	defer faults.Set(nil)
	if _, err := h.promote(key, job, migNow.Add(-48*time.Hour), marker, store.PromoteRequest{}); err == nil {
		h.t.Fatal("the promotion did not stop after its commit")
	}
}

// pendingTemp is the path of the one promotion temp in key's dir: the
// temp of the promotion crashAfterCommit left in flight.
func (h *hostBuilder) pendingTemp(key string) string {
	h.t.Helper()
	temps, _ := filepath.Glob(h.path(key, storeTempPrefix+"*"))
	if len(temps) != 1 {
		h.t.Fatalf("temps %v", temps)
	}
	return temps[0]
}

func (h *hostBuilder) path(key string, name ...string) string {
	return filepath.Join(append([]string{h.root, key}, name...)...)
}

var migJob = store.Job{PiVersion: migPi, Venue: "local", Model: migModel}

// buildHostRoot makes a varied single-host root: one key per case, each
// with a history, and two entries that are not keys.
func buildHostRoot(t *testing.T, root string) []hostCase {
	h := newHostBuilder(t, root)
	var cases []hostCase
	add := func(name string, to migrate.Action, why string, build func(key string)) {
		key := store.Key("github", "migrate", name)
		build(key)
		cases = append(cases, hostCase{name: name, key: key, to: to, why: why})
	}
	moved := migrate.Migrated
	add("resumable", moved, "", func(k string) { h.mustPromote(k, migJob, "r1", store.PromoteRequest{}) })
	add("long chain", moved, "", func(k string) {
		for i := range 5 {
			h.mustPromote(k, migJob, fmt.Sprintf("c%d", i), store.PromoteRequest{})
		}
	})
	add("expired", moved, "", func(k string) {
		h.now = migNow.Add(-20 * 24 * time.Hour)
		defer func() { h.now = migNow.Add(-time.Hour) }()
		h.mustPromote(k, migJob, "e1", store.PromoteRequest{})
	})
	add("context full", moved, "", func(k string) {
		tokens := int64(190000)
		h.mustPromote(k, migJob, "x1", store.PromoteRequest{Tokens: &tokens, Window: 200000})
	})
	add("other venue", moved, "", func(k string) {
		h.mustPromote(k, store.Job{PiVersion: migPi, Venue: "podman", Model: migModel}, "v1", store.PromoteRequest{})
	})
	add("other pi", moved, "", func(k string) {
		h.mustPromote(k, migJob, "p1", store.PromoteRequest{PiVersion: "0.79.0"})
	})
	add("too old", moved, "", func(k string) {
		if res, err := h.promote(k, migJob, migNow.Add(-90*24*time.Hour), "o1", store.PromoteRequest{}); err != nil || !res.Promoted {
			t.Fatalf("promote: %+v, %v", res, err)
		}
	})
	add("too large", moved, "", func(k string) {
		h.mustPromote(k, migJob, strings.Repeat("l", 10000), store.PromoteRequest{})
	})
	add("pending", moved, "", func(k string) {
		h.mustPromote(k, migJob, "n1", store.PromoteRequest{})
		h.crashAfterCommit(k, migJob, "n2")
	})
	add("lost temp", moved, "", func(k string) {
		h.mustPromote(k, migJob, "t1", store.PromoteRequest{})
		h.crashAfterCommit(k, migJob, "t2")
		removeTemps(t, h.path(k))
	})
	add("replaced", moved, "", func(k string) {
		h.mustPromote(k, migJob, "w1", store.PromoteRequest{})
		if err := os.WriteFile(h.path(k, store.TranscriptName), convo(migNow, "out of band"), 0o600); err != nil {
			t.Fatal(err)
		}
	})
	add("no transcript", moved, "", func(k string) {
		h.mustPromote(k, migJob, "g1", store.PromoteRequest{})
		if err := os.Remove(h.path(k, store.TranscriptName)); err != nil {
			t.Fatal(err)
		}
	})
	add("damaged meta.db", migrate.Failed, "meta-unreadable on the host; not moved, so absent on the fleet", func(k string) {
		h.mustPromote(k, migJob, "d1", store.PromoteRequest{})
		if err := os.WriteFile(h.path(k, db.FileName), bytes.Repeat([]byte{0xa5}, 4096), 0o600); err != nil {
			t.Fatal(err)
		}
	})
	add("legacy", migrate.Failed, "resumed by the legacy rules on the host; refused (migrate to meta.db first), so absent on the fleet", func(k string) {
		if err := os.MkdirAll(h.path(k), 0o700); err != nil {
			t.Fatal(err)
		}
		for name, data := range map[string]string{store.TranscriptName: string(convo(migNow.Add(-48*time.Hour), "legacy")), "pi-version": migPi, "venue": "local"} {
			if err := os.WriteFile(h.path(k, name), []byte(data), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		mtime := migNow.Add(-2 * time.Hour)
		os.Chtimes(h.path(k, store.TranscriptName), mtime, mtime)
	})
	add("empty key dir", migrate.Skipped, "absent on both", func(k string) {
		if err := os.MkdirAll(h.path(k), 0o700); err != nil {
			t.Fatal(err)
		}
	})
	if err := os.WriteFile(filepath.Join(root, "README"), []byte("not a key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(h.path(cases[0].key), filepath.Join(root, strings.Repeat("b", 32))); err != nil {
		t.Fatal(err)
	}
	return cases
}

func removeTemps(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), storeTempPrefix) {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				t.Fatal(err)
			}
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%s: %d promotion temps, want the one a crash left", dir, n)
	}
}

// migProfile is a job and the operator's bounds: one column of the
// verdict table.
type migProfile struct {
	name   string
	bounds gates.Bounds
	job    store.Job
}

func migProfiles() []migProfile {
	const day = 24 * time.Hour
	all := gates.Bounds{MaxBytes: 8192, TTL: 14 * day, MaxAge: 30 * day, MaxResumeChain: 3, MaxContextPct: 80}
	var out []migProfile
	for _, b := range []struct {
		name string
		b    gates.Bounds
	}{{"unbounded", gates.Bounds{}}, {"all bounds", all}} {
		for _, venue := range []string{"local", "podman", ""} {
			for _, pi := range []string{migPi, "0.79.0", ""} {
				for _, model := range []string{migModel, "openai/gpt-5"} {
					out = append(out, migProfile{fmt.Sprintf("%s venue=%q pi=%q model=%q", b.name, venue, pi, model), b.b, store.Job{PiVersion: pi, Venue: venue, Model: model}})
				}
			}
		}
	}
	for name, b := range map[string]gates.Bounds{
		"ttl": {TTL: 14 * day}, "max bytes": {MaxBytes: 8192}, "max age": {MaxAge: 30 * day},
		"chain": {MaxResumeChain: 3}, "context": {MaxContextPct: 80},
	} {
		out = append(out, migProfile{name, b, migJob})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// verdicts resolves every key for every profile on the stores open
// makes, into a scratch job dir: resume, reason, and for a resume the
// generation and the bytes delivered.
func verdicts(t *testing.T, open func(store.Options) *store.Store, keys []string, ps []migProfile) map[string]string {
	t.Helper()
	jobDir := t.TempDir()
	out := map[string]string{}
	for _, p := range ps {
		s := open(store.Options{Bounds: p.bounds, Now: func() time.Time { return migNow }})
		for _, k := range keys {
			sess, err := s.Resolve(k, p.job, jobDir)
			if err != nil {
				t.Fatalf("resolve %s: %v", k, err)
			}
			v := fmt.Sprintf("%v %s", sess.Resume, sess.Reason)
			if sess.Resume {
				v += fmt.Sprintf(" gen %d, %d bytes %x", sess.Gen(), sess.Bytes, sha256.Sum256(stagedOf(t, jobDir)))
			}
			out[k+" | "+p.name] = v
		}
	}
	return out
}

func onRoot(t *testing.T, root string) func(store.Options) *store.Store {
	return func(o store.Options) *store.Store {
		s, err := store.New(root, o)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}

func onFleet(b *Backend) func(store.Options) *store.Store {
	return func(o store.Options) *store.Store { return store.NewOn(b, o) }
}
