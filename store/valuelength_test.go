package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"sessdb/gates"
)

// A job value one byte longer than a legacy sidecar holds is refused by
// Resolve before anything is touched: the job dir keeps its earlier
// ticket and staged file byte for byte, and the error names the field
// and its length, never its value. Before, a 70,000-byte venue resolved,
// and its ticket was more than promote reads: the job's run was lost.
func TestResolveRefusesAJobValueLongerThanASidecar(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "a")
	_, jobDir := mustResolve(t, s, testKey, localJob())
	long := strings.Repeat("v", MaxValueBytes+1)
	for name, job := range map[string]Job{
		"pi version": {PiVersion: long, Venue: "local"},
		"venue":      {PiVersion: testPi, Venue: long},
		"model":      {PiVersion: testPi, Venue: "local", Model: "anthropic/" + long[len("anthropic/"):]},
		"job id":     {PiVersion: testPi, Venue: "local", ID: long},
	} {
		resolveRefusedUntouched(t, s, jobDir, name, job, ErrValueTooLong, "vvvv")
	}
}

// resolveRefusedUntouched holds that a resolve of job into jobDir is
// refused with want, its error naming the field name and not quoting
// its value (quoted: a piece of it), and that the job dir's earlier
// ticket and staged file are left byte for byte.
func resolveRefusedUntouched(t *testing.T, s *Store, jobDir, name string, job Job, want error, quoted string) {
	t.Helper()
	ticket := mustRead(t, filepath.Join(jobDir, TicketName))
	stagedBefore := staged(t, jobDir)
	_, err := s.Resolve(testKey, job, jobDir)
	if !errors.Is(err, want) {
		t.Fatalf("%s: %v, want %v", name, err, want)
	}
	if msg := err.Error(); !strings.Contains(msg, name) || strings.Contains(msg, quoted) {
		t.Errorf("%s: error %q does not name the field, or quotes its value", name, msg)
	}
	if got := mustRead(t, filepath.Join(jobDir, TicketName)); !bytes.Equal(got, ticket) {
		t.Errorf("%s: the earlier ticket changed", name)
	}
	if got := staged(t, jobDir); !bytes.Equal(got, stagedBefore) {
		t.Errorf("%s: the staged file changed (%d bytes, were %d)", name, len(got), len(stagedBefore))
	}
}

// A job whose values are each as long as a sidecar holds, all escaped by
// JSON to six bytes a byte, with a job dir as deep as its staged file's
// path allows, resolves, promotes and resumes: its ticket (over 64 KiB,
// which promote read before) is one promote reads.
func TestTheLongestJobValuesPromoteAndResume(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	jobDir := deepDir(t, unix.PathMax-1-len("/"+StagedDirName+"/"+TranscriptName))
	escaped := strings.Repeat("<", MaxValueBytes) // "\u003c" in JSON
	job := Job{PiVersion: strings.Repeat("9", MaxValueBytes), Venue: escaped, ID: escaped}
	sess, err := s.Resolve(testKey, job, jobDir)
	if err != nil {
		t.Fatal(err)
	}
	want(t, sess, false, gates.Absent)
	if fi, err := os.Stat(filepath.Join(jobDir, TicketName)); err != nil || fi.Size() <= 64<<10 {
		t.Fatalf("ticket: %v; want one over 64 KiB for this test to mean anything", err)
	}
	back, err := ReadTicket(jobDir)
	if err != nil {
		t.Fatal(err)
	}
	stage(t, jobDir, append(transcriptBytes(s.opts.Now()), entryLine("a")...))
	if res := mustPromote(t, s, back, PromoteRequest{PiVersion: job.PiVersion}); !res.Promoted {
		t.Fatalf("promote: %s", res.Reason)
	}
	again, _ := mustResolve(t, s, testKey, job)
	want(t, again, true, gates.Resumed)
}

// deepDir makes a directory under a temp dir whose path is n bytes long
// (within a byte or two), of components full of '<', and returns it.
func deepDir(t *testing.T, n int) string {
	t.Helper()
	p := t.TempDir()
	for len(p) < n-2 {
		p = filepath.Join(p, strings.Repeat("<", min(200, n-len(p)-2)))
	}
	if err := os.MkdirAll(p, 0o700); err != nil {
		t.Fatalf("mkdir of %d bytes: %v", len(p), errors.Unwrap(err))
	}
	return p
}

// The longest ticket a job's values can make, with a fleet's root (a
// transcripts dir as long as a path, its prefix as long as a prefix may
// be), is read back whole: maxTicketBytes is not the bound a job meets.
func TestTheLongestTicketIsReadBack(t *testing.T) {
	worst := strings.Repeat("\x01", MaxValueBytes) // "\u0001" in JSON
	sess := Session{
		Ticket: strings.Repeat("a", 32), Key: testKey, Reason: gates.Absent,
		Root:  "/" + strings.Repeat("\x01", unix.PathMax-2) + " (etcd prefix /" + strings.Repeat("\x01", 4095) + ")",
		Venue: worst, Job: worst, Model: strings.Repeat("a", 128),
		JobDir: "/" + strings.Repeat("\x01", unix.PathMax-2),
	}
	b, err := encodeTicket(sess)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > maxTicketBytes {
		t.Fatalf("the longest ticket is %d bytes, more than ReadTicket reads (%d)", len(b), maxTicketBytes)
	}
	t.Logf("the longest ticket a job's values allow: %d bytes", len(b))
	dir := t.TempDir()
	jd, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer jd.Close()
	if err := writeTicket(jd, sess); err != nil {
		t.Fatal(err)
	}
	back, err := ReadTicket(dir)
	if err != nil {
		t.Fatalf("%d-byte ticket: %v", len(b), err)
	}
	if back.Venue != sess.Venue || back.Job != sess.Job || back.Root != sess.Root {
		t.Error("the ticket read back is not the one written")
	}
}

// A ticket longer than promote reads (a root under a working directory
// deeper than a path) is not written: Resolve fails, where before it
// handed the job a ticket its promote would refuse after the run.
func TestATicketPromoteCannotReadIsNotWritten(t *testing.T) {
	dir := t.TempDir()
	jd, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer jd.Close()
	sess := Session{Ticket: strings.Repeat("a", 32), Key: testKey, Reason: gates.Absent, Root: "/" + strings.Repeat("r", maxTicketBytes)}
	if err := writeTicket(jd, sess); err == nil || strings.Contains(err.Error(), "rrrr") {
		t.Fatalf("writeTicket of a root of %d bytes: %v; want an error that does not quote it", len(sess.Root), err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("the job dir holds %d entries after the refusal, want none", len(ents))
	}
}

// A promotion whose pi version, or whose ticket's venue, model or job id,
// is longer than a sidecar holds is refused before anything is written:
// the key keeps its generation and history, and the job's transcript
// stays where it is for a retry.
func TestPromoteRefusesAValueLongerThanASidecar(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	_, first := runJob(t, s, testKey, localJob(), PromoteRequest{}, "a")
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	run := append(staged(t, jobDir), entryLine("b")...)
	stage(t, jobDir, run)
	before := historyOf(t, root, testKey)
	long := strings.Repeat("9", MaxValueBytes+1)
	edited := func(edit func(*Session)) Session { e := sess; edit(&e); return e }
	for name, c := range map[string]struct {
		sess Session
		req  PromoteRequest
	}{
		"pi version": {sess, PromoteRequest{PiVersion: long}},
		"venue":      {edited(func(e *Session) { e.Venue = long }), PromoteRequest{PiVersion: testPi}},
		"model":      {edited(func(e *Session) { e.Model = long }), PromoteRequest{PiVersion: testPi}},
		"job id":     {edited(func(e *Session) { e.Job = long }), PromoteRequest{PiVersion: testPi}},
	} {
		res, err := s.Promote(c.sess, c.req)
		if !errors.Is(err, ErrValueTooLong) || !strings.Contains(err.Error(), name) || res.Promoted {
			t.Fatalf("%s of %d bytes: promote = %+v, %v; want ErrValueTooLong naming it", name, len(long), res, err)
		}
	}
	if after := historyOf(t, root, testKey); len(after) != len(before) {
		t.Errorf("history: %d entries after the refusals, %d before", len(after), len(before))
	}
	if got := staged(t, jobDir); !bytes.Equal(got, run) {
		t.Error("the job's transcript changed")
	}
	if res := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi}); !res.Promoted || res.Gen != first.Gen+1 {
		t.Fatalf("the retry with values a sidecar holds: %+v, want gen %d promoted", res, first.Gen+1)
	}
}

// A ticket whose venue, model or job id is longer than a sidecar holds
// (no resolve writes one: edited, or from a sessdb before the bound) is
// refused when it is read, naming the fields and not quoting them. At
// 016b3ca such a ticket promoted and stamped its venue; with Promote's
// check alone (792108c), the CLI's promote printed a reason of "" and
// exited 0.
func TestReadTicketRefusesAValueLongerThanASidecar(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	for _, field := range []string{"venue", "model", "job"} {
		_, jobDir := mustResolve(t, s, testKey, localJob())
		name := filepath.Join(jobDir, TicketName)
		var m map[string]any
		if err := json.Unmarshal(mustRead(t, name), &m); err != nil {
			t.Fatal(err)
		}
		m[field] = strings.Repeat("v", MaxValueBytes+1)
		b, _ := json.Marshal(m)
		if err := os.WriteFile(name, b, 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := ReadTicket(jobDir)
		if !errors.Is(err, ErrBadTicket) || !strings.Contains(err.Error(), "longer than 4096 bytes") || strings.Contains(err.Error(), "vvvv") {
			t.Errorf("a ticket whose %s is %d bytes: %v; want ErrBadTicket naming the bound", field, MaxValueBytes+1, err)
		}
	}
}

// A job value that is not valid UTF-8 is refused by Resolve before
// anything is touched, and by Promote for a Session or request that
// carries one, as the CLI refuses such a flag. Before, Resolve took it:
// the ticket, JSON, carried a venue of "loc\xffal" back from ReadTicket as
// "loc\uFFFDal", the promotion stamped that, and every later job of the
// venue the worker really gave cold-started venue-changed, its run
// replacing the conversation, for ever.
func TestAJobValueThatIsNotUTF8IsRefusedBeforeItReachesTheTicket(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "a")
	_, jobDir := mustResolve(t, s, testKey, localJob())
	bad := "loc\xffal"
	for name, job := range map[string]Job{
		"pi version": {PiVersion: bad, Venue: "local"},
		"venue":      {PiVersion: testPi, Venue: bad},
		"job id":     {PiVersion: testPi, Venue: "local", ID: bad},
	} {
		resolveRefusedUntouched(t, s, jobDir, name, job, ErrValueNotUTF8, "\xff")
	}

	// The job's own ticket, edited by a Go caller, and the request's pi
	// version: refused, nothing written.
	sess, err := ReadTicket(jobDir)
	if err != nil {
		t.Fatal(err)
	}
	edited := sess
	edited.Venue = bad
	if _, err := s.Promote(edited, PromoteRequest{PiVersion: testPi}); !errors.Is(err, ErrValueNotUTF8) {
		t.Errorf("promote of a ticket whose venue is not UTF-8: %v, want ErrValueNotUTF8", err)
	}
	if _, err := s.Promote(sess, PromoteRequest{PiVersion: bad}); !errors.Is(err, ErrValueNotUTF8) {
		t.Errorf("promote with a pi version that is not UTF-8: %v, want ErrValueNotUTF8", err)
	}
	again, _ := mustResolve(t, s, testKey, localJob())
	want(t, again, true, gates.Resumed)

	// A model that is not text is no model, as the legacy check makes
	// any model with a byte outside ASCII: the job resolves, as it did
	// (the CLI passes --model through unchecked).
	job := localJob()
	job.Model = "anthropic/" + bad
	noModel, _ := mustResolve(t, s, testKey, job)
	want(t, noModel, true, gates.Resumed)
	if noModel.Model != "" {
		t.Errorf("a model that is not UTF-8 was kept as %q; want no model", noModel.Model)
	}
}
