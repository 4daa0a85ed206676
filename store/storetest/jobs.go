package storetest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sessdb/internal/pientry"
	"sync/atomic"
	"time"

	"sessdb/gates"
	"sessdb/store"
)

// The jobs and transcripts the promises are made of.

const (
	piVersion = "0.58.3"
	model     = "anthropic/claude-sonnet-4-5"
)

var key = store.Key("github", "acme/widget", "pi/issue-1")

func localJob() store.Job { return store.Job{PiVersion: piVersion, Venue: "local", Model: model} }

// header is pi's session header and the model change it starts with.
func header(created time.Time) []byte {
	return []byte(fmt.Sprintf(`{"type":"session","version":3,"id":"0b9c3f0e-1111-4a2b-8c3d-123456789abc","timestamp":%q,"cwd":"/workspace"}`+"\n", created.UTC().Format("2006-01-02T15:04:05.000Z")) +
		`{"type":"model_change","id":"mc000001","parentId":null,"timestamp":"2026-11-01T12:00:00.000Z","provider":"anthropic","modelId":"claude-sonnet-4-5"}` + "\n")
}

// turn appends a prompt and an answer that ended the turn, with a usage
// of total tokens.
func turn(data []byte, tag string, total int64) []byte {
	// Entry ids are unique in a transcript, or pi's branch would loop.
	n := turns.Add(1)
	data = pientry.Message(data, fmt.Sprintf("u-%s-%d", tag, n), "user", "prompt "+tag, "", 0)
	return pientry.Message(data, fmt.Sprintf("a-%s-%d", tag, n), "assistant", "answer "+tag, "stop", total)
}

var turns atomic.Int64

// loopTurn appends a prompt and an answer that ended the turn, and makes
// the prompt's parent the answer: a branch that loops, which pi never
// writes and would loop on.
func loopTurn(data []byte, tag string) []byte {
	prompt, answer := "u-loop-"+tag, "a-loop-"+tag
	data = pientry.Message(pientry.Message(data, prompt, "user", "prompt "+tag, "", 0), answer, "assistant", "answer "+tag, "stop", 50)
	parent := regexp.MustCompile(`"id":"` + prompt + `","parentId":(null|"[^"]*")`)
	return parent.ReplaceAll(data, []byte(`"id":"`+prompt+`","parentId":"`+answer+`"`))
}

// lastText is the text of data's last message ("" for none).
func lastText(data []byte) string {
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	var v struct {
		Message struct {
			Content []struct{ Text string } `json:"content"`
		} `json:"message"`
	}
	if len(lines) < 2 || json.Unmarshal(lines[len(lines)-1], &v) != nil || len(v.Message.Content) == 0 {
		return ""
	}
	return v.Message.Content[0].Text
}

// stagedPath is where Resolve stages a job's transcript and Promote reads
// the run's.
func stagedPath(jobDir string) string {
	return filepath.Join(jobDir, store.StagedDirName, store.TranscriptName)
}

// stage replaces the job's staged file with data.
func (e *env) stage(jobDir string, data []byte) {
	e.t.Helper()
	p := stagedPath(jobDir)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		e.t.Fatal(err)
	}
	os.Remove(p)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		e.t.Fatal(err)
	}
}

// staged returns the job's staged file, failing the promise when there is
// none: every Resolve that returns leaves one, empty for a cold start.
func (e *env) staged(jobDir string) []byte {
	e.t.Helper()
	b, err := os.ReadFile(stagedPath(jobDir))
	if err != nil {
		e.t.Fatal(err)
	}
	return b
}

// resolveOn resolves key for job on s in a new job dir, and checks what
// every resolve promises: a cold start stages 0 bytes, a resume exactly
// Bytes bytes with the ticket's checksum, the staged dir is 0700, and the
// ticket reads back as the session.
func (e *env) resolveOn(s *store.Store, key string, job store.Job) (store.Session, string) {
	e.t.Helper()
	jobDir := e.t.TempDir()
	sess, err := s.Resolve(key, job, jobDir)
	if err != nil {
		e.t.Fatalf("resolve %s: %v", key, err)
	}
	got := e.staged(jobDir)
	switch {
	case sess.Resume != (sess.Reason == gates.Resumed):
		e.fatalf("resolve = %s: resume and reason disagree", describe(sess))
	case !sess.Resume && (len(got) != 0 || sess.Bytes != 0):
		e.fatalf("cold start %s staged %d bytes (session says %d), want 0", sess.Reason, len(got), sess.Bytes)
	case sess.Resume && (int64(len(got)) != sess.Bytes || store.Checksum(crc(got)) != sess.CRC32C):
		e.fatalf("resumed %d bytes (crc %s) but staged %d (crc %08x)", sess.Bytes, sess.CRC32C, len(got), crc(got))
	}
	if fi, err := os.Stat(filepath.Dir(stagedPath(jobDir))); err != nil || fi.Mode().Perm() != 0o700 {
		e.fatalf("staged dir: %v, %v; want mode 0700", fi, err)
	}
	ticket, err := store.ReadTicket(jobDir)
	if err != nil || !reflect.DeepEqual(ticket, sess) {
		e.fatalf("ReadTicket = %+v, %v\nwant %+v", ticket, err, sess)
	}
	return sess, jobDir
}

// resolve is resolveOn on the promise's default store.
func (e *env) resolve(key string, job store.Job) (store.Session, string) {
	e.t.Helper()
	return e.resolveOn(e.s, key, job)
}

// want checks a verdict.
func (e *env) want(sess store.Session, resume bool, reason gates.Reason) {
	e.t.Helper()
	if sess.Resume != resume || sess.Reason != reason {
		e.fatalf("resolve = %s, want {resume %v, %s}", describe(sess), resume, reason)
	}
}

// job resolves key as the job named id and returns its session, its job
// dir and what a run starts from: what it was handed, or a fresh header.
func (e *env) job(key, id string) (store.Session, string, []byte) {
	e.t.Helper()
	j := localJob()
	j.ID = id
	sess, jobDir := e.resolve(key, j)
	data := e.staged(jobDir)
	if len(data) == 0 {
		data = header(e.clock.now)
	}
	return sess, jobDir, data
}

// promoteOn promotes sess on s, and checks what every promotion promises:
// no error (a refusal is a result, not an error), Promoted exactly when
// the reason is promoted, and the ticket's key.
func (e *env) promoteOn(s *store.Store, sess store.Session, req store.PromoteRequest) store.PromoteResult {
	e.t.Helper()
	res, err := s.Promote(sess, req)
	if err != nil {
		e.t.Fatalf("promote: %v (%+v)", err, res)
	}
	if res.Promoted != (res.Reason == gates.Promoted) || res.Key != sess.Key {
		e.fatalf("promote = %+v: promoted and reason disagree", res)
	}
	return res
}

// promote is promoteOn on the promise's default store.
func (e *env) promote(sess store.Session, req store.PromoteRequest) store.PromoteResult {
	e.t.Helper()
	return e.promoteOn(e.s, sess, req)
}

// runOn is one whole job that must promote: resolve key for job on s,
// answer one turn tagged tag onto what was handed (or a fresh header after
// a cold start, as pi writes one), promote with req, by default stamping
// the job's own pi version.
func (e *env) runOn(s *store.Store, key string, job store.Job, req store.PromoteRequest, tag string) (store.Session, store.PromoteResult) {
	e.t.Helper()
	sess, jobDir := e.resolveOn(s, key, job)
	data := e.staged(jobDir)
	if len(data) == 0 {
		data = header(e.clock.now)
	}
	e.stage(jobDir, turn(data, tag, 100))
	if req.PiVersion == "" {
		req.PiVersion = job.PiVersion
	}
	res := e.promoteOn(s, sess, req)
	if !res.Promoted {
		e.fatalf("promote of %q = %+v, want promoted", tag, res)
	}
	return sess, res
}

// run is runOn with the local job on the promise's default store.
func (e *env) run(key string, tag string) (store.Session, store.PromoteResult) {
	e.t.Helper()
	return e.runOn(e.s, key, localJob(), store.PromoteRequest{}, tag)
}

func tokens(n int64) *int64 { return &n }

// castagnoli is the suite's own CRC32C table, independent of the store's
// code, so a store that checksums the wrong bytes fails the promises.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// crc is b's CRC32C, as a ticket and a record carry it.
func crc(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }
