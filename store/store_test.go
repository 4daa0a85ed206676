package store

import (
	"bytes"
	"os"
	"path/filepath"
	"sessdb/internal/pientry"
	"testing"
	"time"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/fsat"
	"sessdb/store/models"
	"sessdb/store/transcript"
)

func TestKeyMatchesLegacyDerivation(t *testing.T) {
	// Vectors computed with the legacy store's own recipe in Node.js:
	// createHash("sha256").update(parts.join("\0")).digest("hex").slice(0, 32)
	for _, v := range []struct{ kind, repo, ref, want string }{
		{"github", "acme/widget", "pi/issue-1", "2dc0f8ddc6a9b84a405d1cd6ab3055a9"},
		{"local", "", "nightly", "a457538b2795034a04bc66d03a231de1"},
		{"gitlab", "a", "b\x00c", "cbf445c973f6b15f66b7baf8763a5a27"},
	} {
		if got := Key(v.kind, v.repo, v.ref); got != v.want {
			t.Errorf("Key(%q, %q, %q) = %s, want %s", v.kind, v.repo, v.ref, got, v.want)
		}
	}
	if Key("github", "a/b", "c") == Key("github", "a", "b/c") || Key("github", "ab", "c") == Key("github", "a", "bc") {
		t.Error("a shifted boundary between repo and ref collides")
	}
	if Key("github", "a/b", "main") == Key("gitlab", "a/b", "main") {
		t.Error("two forges share a key")
	}
}

func TestValidKey(t *testing.T) {
	for k, ok := range map[string]bool{
		testKey:                               true,
		"2DC0F8DDC6A9B84A405D1CD6AB3055A9":    false,
		"2dc0f8ddc6a9b84a405d1cd6ab3055a":     false,
		"2dc0f8ddc6a9b84a405d1cd6ab3055a9a":   false,
		"../../etc/passwd0000000000000000000": false,
		"2dc0f8ddc6a9b84a405d1cd6ab3055g9":    false,
		"":                                    false,
	} {
		if ValidKey(k) != ok {
			t.Errorf("ValidKey(%q) = %v, want %v", k, !ok, ok)
		}
	}
	s, _, _ := newTestStore(t, gates.Bounds{})
	if _, err := s.Resolve("../x", localJob(), t.TempDir()); err == nil {
		t.Error("Resolve accepted an invalid key")
	}
}

func TestColdStartStagesEmptyFileInPrivateDir(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	want(t, sess, false, gates.Absent)
	fi, err := os.Stat(filepath.Join(jobDir, StagedDirName))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o700 {
		t.Errorf("staged dir mode %v, want 0700", fi.Mode().Perm())
	}
	if _, err := os.Stat(root); !os.IsNotExist(err) {
		t.Errorf("resolve created the sessions root: %v", err)
	}
}

func TestPromoteThenResumeHandsOverTheSameBytes(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	_, res := runJob(t, s, testKey, localJob(), PromoteRequest{}, "first")
	if res.Gen != 1 || res.Reason != gates.Promoted {
		t.Fatalf("first promotion = %+v", res)
	}
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	want(t, sess, true, gates.Resumed)
	if sess.Gen() != 1 {
		t.Errorf("delivered gen %d, want 1", sess.Gen())
	}
	if !bytes.Equal(staged(t, jobDir), readCanonical(t, root, testKey)) {
		t.Error("staged copy differs from the key's transcript")
	}
	fi, _ := os.Stat(keyDirPath(root, testKey))
	if fi.Mode().Perm() != 0o700 {
		t.Errorf("key dir mode %v, want 0700", fi.Mode().Perm())
	}
}

func TestPiVersionStamp(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{PiVersion: "0.58.3"}, "a")
	for _, c := range []struct {
		job    string
		resume bool
	}{{"0.58.3", true}, {"0.58.4", false}, {"", false}} {
		j := localJob()
		j.PiVersion = c.job
		sess, _ := mustResolve(t, s, testKey, j)
		if sess.Resume != c.resume || (!c.resume && sess.Reason != gates.PiVersionChanged) {
			t.Errorf("job pi %q: %+v", c.job, sess)
		}
	}
	// A promotion that knows no version leaves an unknown stamp, which
	// refuses every job (legacy #336: invalidate, never keep the old one).
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	stage(t, jobDir, append(staged(t, jobDir), entryLine("b")...))
	mustPromote(t, s, sess, PromoteRequest{PiVersion: ""})
	got, _ := mustResolve(t, s, testKey, localJob())
	want(t, got, false, gates.PiVersionChanged)
}

func TestVenueStamp(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	far := localJob()
	far.Venue = "podman"
	runJob(t, s, testKey, far, PromoteRequest{}, "on podman")
	sess, _ := mustResolve(t, s, testKey, localJob())
	want(t, sess, false, gates.VenueChanged)
	sess, _ = mustResolve(t, s, testKey, far)
	want(t, sess, true, gates.Resumed)
	// A job whose venue cannot be resolved never resumes, and its
	// promotion leaves a stamp no venue matches.
	none := localJob()
	none.Venue = ""
	sess, _ = mustResolve(t, s, testKey, none)
	want(t, sess, false, gates.VenueChanged)
	runJob(t, s, testKey, none, PromoteRequest{}, "nowhere")
	for _, j := range []Job{localJob(), far} {
		sess, _ = mustResolve(t, s, testKey, j)
		want(t, sess, false, gates.VenueChanged)
	}
}

func TestResumeChainBound(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{MaxResumeChain: 3})
	// Legacy test 20: resumed x3 (counter 1..3), the 4th is refused and
	// resets the counter, the 5th resumes.
	wantSeq := []struct {
		resume bool
		chain  uint64
	}{{false, 0}, {true, 1}, {true, 2}, {true, 3}, {false, 0}, {true, 1}}
	for i, w := range wantSeq {
		sess, _ := runJob(t, s, testKey, localJob(), PromoteRequest{}, "run")
		if sess.Resume != w.resume {
			t.Fatalf("run %d: %+v, want resume %v", i+1, sess, w.resume)
		}
		if i == 4 && sess.Reason != gates.ResumeChainTooLong {
			t.Fatalf("run 5 reason %s, want %s", sess.Reason, gates.ResumeChainTooLong)
		}
		if got := chainOf(t, root, testKey); got != w.chain {
			t.Fatalf("after run %d chain = %d, want %d", i+1, got, w.chain)
		}
	}
}

func TestChainCountsWithTheBoundOff(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	for i := 0; i < 5; i++ {
		runJob(t, s, testKey, localJob(), PromoteRequest{}, "run")
	}
	if got := chainOf(t, root, testKey); got != 4 {
		t.Fatalf("chain = %d after five runs with the bound off, want 4", got)
	}
	s.opts.Bounds.MaxResumeChain = 3
	sess, _ := mustResolve(t, s, testKey, localJob())
	want(t, sess, false, gates.ResumeChainTooLong)
}

func TestContextBound(t *testing.T) {
	for _, c := range []struct {
		tokens int64
		resume bool
	}{{159999, true}, {160000, false}, {180000, false}} {
		s, _, _ := newTestStore(t, gates.Bounds{MaxContextPct: 80})
		runJob(t, s, testKey, localJob(), PromoteRequest{Tokens: tok(c.tokens), Window: 200000}, "x")
		sess, _ := mustResolve(t, s, testKey, localJob())
		if sess.Resume != c.resume || (!c.resume && sess.Reason != gates.ContextTooFull) {
			t.Errorf("%d/200000 at 80%%: %+v", c.tokens, sess)
		}
		// A reading stamped with another model says nothing about this one.
		other := localJob()
		other.Model = "anthropic/claude-opus-4-5"
		sess, _ = mustResolve(t, s, testKey, other)
		want(t, sess, true, gates.Resumed)
	}
}

// The reading a promotion stores is pi's own at the end of the run,
// computed on the promoted transcript and stamped with the model pi
// resumes with; the runner's numbers only override it (issue 11).
func TestContextReadingComesFromTheTranscript(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	// The runner's override: tokens and window as given, the model the
	// transcript's.
	runJob(t, s, testKey, localJob(), PromoteRequest{Tokens: tok(12345), Window: 200000}, "a")
	if c := contextOf(t, root, testKey); c == nil || c.Tokens != 12345 || c.Window != 200000 || c.Model != testModel {
		t.Fatalf("context after an override = %+v", c)
	}
	// No override: pi's own reading of the promoted transcript, and the
	// window of its model from pi's built-in table.
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "b")
	end := endOf(t, readCanonical(t, root, testKey))
	if c := contextOf(t, root, testKey); c == nil || c.Tokens != end.Tokens || c.Window != 200000 || c.Model != testModel {
		t.Fatalf("context from the transcript = %+v, pi says %d tokens of %s", c, end.Tokens, end.Model)
	}
	// A cold run's own reading is kept: it describes the conversation it
	// promoted.
	other := localJob()
	other.PiVersion = "0.59.0"
	runJob(t, s, testKey, other, PromoteRequest{}, "c")
	if c := contextOf(t, root, testKey); c == nil || c.Model != testModel {
		t.Fatalf("a cold run's reading was dropped: %+v", c)
	}
	// A model pi has no window for is no measurement, and clears the old
	// reading: it described a context that no longer exists.
	sess, jobDir := mustResolve(t, s, testKey, other)
	stage(t, jobDir, append(staged(t, jobDir), `{"type":"model_change","id":"mc000002","parentId":"00000001","timestamp":"2026-11-01T12:00:00.000Z","provider":"mock","modelId":"unknown-model"}`+"\n"...))
	if res := mustPromote(t, s, sess, PromoteRequest{PiVersion: other.PiVersion}); !res.Promoted {
		t.Fatalf("promote: %+v", res)
	}
	if c := contextOf(t, root, testKey); c != nil {
		t.Fatalf("an unknown window kept a reading: %+v", c)
	}
	// The window given by the runner makes it a measurement again.
	sess, jobDir = mustResolve(t, s, testKey, other)
	stage(t, jobDir, staged(t, jobDir))
	if res := mustPromote(t, s, sess, PromoteRequest{PiVersion: other.PiVersion, Window: 100000}); !res.Promoted || res.Run != transcript.Unchanged {
		t.Fatalf("promote: %+v", res)
	}
	if c := contextOf(t, root, testKey); c == nil || c.Window != 100000 || c.Model != "mock/unknown-model" {
		t.Fatalf("context with the runner's window = %+v", c)
	}
}

// After a compaction pi reports no reading until a fresh usage: the
// promotion stores none, and clears the one before.
func TestUnknownReadingAfterACompactionClears(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{Tokens: tok(150000), Window: 200000}, "a")
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	data := pientry.Message(staged(t, jobDir), "a-1", "assistant", "long answer", "stop", 190000)
	data = append(data, `{"type":"compaction","id":"cmp-1","parentId":"a-1","timestamp":"2026-11-01T12:00:00.000Z","summary":"what happened","firstKeptEntryId":"a-1","tokensBefore":190000}`+"\n"...)
	data = pientry.Message(data, "u-2", "user", "go on", "", 0)
	stage(t, jobDir, data)
	if res := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi}); !res.Promoted {
		t.Fatalf("promote: %+v", res)
	}
	if end := endOf(t, readCanonical(t, root, testKey)); end.Known {
		t.Fatalf("pi would report %d tokens here; the fixture is wrong", end.Tokens)
	}
	if c := contextOf(t, root, testKey); c != nil {
		t.Fatalf("an unknown reading kept one: %+v", c)
	}
}

// endOf is pi's end-of-run answer for a transcript.
func endOf(t *testing.T, data []byte) transcript.End {
	t.Helper()
	end, err := transcript.ReadEnd(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return end
}

func TestTornTailGetsItsNewline(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	data := transcriptBytes(s.opts.Now(), "whole")
	torn := append(append([]byte{}, data...), `{"type":"message","id":"0000000`...)
	stage(t, jobDir, torn)
	res := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi})
	if !res.Promoted || !res.TornTail || res.Bytes != int64(len(torn))+1 {
		t.Fatalf("promote of a torn tail = %+v", res)
	}
	if got := readCanonical(t, root, testKey); !bytes.Equal(got, append(torn, '\n')) {
		t.Fatalf("canonical = %q", got)
	}
	h := historyOf(t, root, testKey)
	if len(h) != 1 || !h[0].TornTail {
		t.Fatalf("history = %+v, want one entry recording the torn tail", h)
	}
	sess, _ = mustResolve(t, s, testKey, localJob())
	want(t, sess, true, gates.Resumed)
}

func TestHistoryRecordsEveryPromotion(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	for i := 0; i < 3; i++ {
		runJob(t, s, testKey, Job{PiVersion: testPi, Venue: "local", ID: "job-" + string(rune('a'+i))}, PromoteRequest{}, "x")
	}
	h := historyOf(t, root, testKey)
	if len(h) != 3 {
		t.Fatalf("history has %d entries, want 3", len(h))
	}
	for i, e := range h {
		if e.Gen != uint64(i+1) || e.Job != "job-"+string(rune('a'+i)) || e.Resumed != (i > 0) || e.Chain != uint64(i) {
			t.Errorf("history[%d] = %+v", i, e)
		}
	}
}

func TestExpiredReadsThePromotionRecordNotTheMtime(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{TTL: 14 * 24 * time.Hour})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "a")
	clock.now = clock.now.Add(15 * 24 * time.Hour)
	// A fresh mtime (a copy, a backup restore) does not make it younger.
	now := time.Now()
	os.Chtimes(filepath.Join(root, testKey, TranscriptName), now, now)
	sess, _ := mustResolve(t, s, testKey, localJob())
	want(t, sess, false, gates.Expired)
}

func TestTranscriptChangedOutOfBandIsNeverResumed(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "aaaa")
	p := filepath.Join(root, testKey, TranscriptName)
	orig := readCanonical(t, root, testKey)
	same := bytes.Replace(orig, []byte("aaaa"), []byte("bbbb"), 1)
	if err := os.WriteFile(p, same, 0o600); err != nil {
		t.Fatal(err)
	}
	sess, _ := mustResolve(t, s, testKey, localJob())
	want(t, sess, false, gates.TranscriptReplaced)
	if err := os.WriteFile(p, append(orig, entryLine("more")...), 0o600); err != nil {
		t.Fatal(err)
	}
	sess, _ = mustResolve(t, s, testKey, localJob())
	want(t, sess, false, gates.TranscriptReplaced)
}

func TestReap(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{TTL: 14 * 24 * time.Hour})
	old, fresh, empty := Key("github", "a/b", "old"), Key("github", "a/b", "fresh"), Key("github", "a/b", "empty")
	clock.now = clock.now.Add(-30 * 24 * time.Hour)
	runJob(t, s, old, localJob(), PromoteRequest{}, "old")
	clock.now = clock.now.Add(30 * 24 * time.Hour)
	runJob(t, s, fresh, localJob(), PromoteRequest{}, "fresh")
	os.MkdirAll(filepath.Join(root, empty), 0o700)
	// The old key's transcript file looks old too.
	then := clock.now.Add(-30 * 24 * time.Hour)
	os.Chtimes(filepath.Join(root, old, TranscriptName), then, then)

	dry, err := s.Reap(true)
	if err != nil || len(dry.Removed) != 1 || dry.Removed[0] != old {
		t.Fatalf("dry run = %+v, %v", dry, err)
	}
	if _, err := os.Stat(filepath.Join(root, old)); err != nil {
		t.Fatal("dry run removed a key")
	}
	res, err := s.Reap(false)
	if err != nil || len(res.Removed) != 1 || res.Removed[0] != old || res.Kept != 2 {
		t.Fatalf("reap = %+v, %v", res, err)
	}
	for k, gone := range map[string]bool{old: true, fresh: false, empty: false} {
		if _, err := os.Stat(filepath.Join(root, k)); os.IsNotExist(err) != gone {
			t.Errorf("key %s removed = %v, want %v", k, !gone, gone)
		}
	}
	s.opts.Bounds.TTL = 0
	clock.now = clock.now.Add(1000 * 24 * time.Hour)
	if res, _ := s.Reap(false); len(res.Removed) != 0 {
		t.Errorf("TTL 0 reaped %v", res.Removed)
	}
}

func TestReapLegacyKeysByMtime(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{TTL: 14 * 24 * time.Hour})
	dir := filepath.Join(root, testKey)
	os.MkdirAll(dir, 0o700)
	os.WriteFile(filepath.Join(dir, TranscriptName), transcriptBytes(clock.now, "legacy"), 0o600)
	// Its mtime says old (the filter passes), but the record-less re-check
	// under the lock reads the same mtime: expired, so removed. Then a
	// legacy key whose mtime is fresh is kept, and no meta.db is left.
	old := clock.now.Add(-20 * 24 * time.Hour)
	os.Chtimes(filepath.Join(dir, TranscriptName), old, old)
	if res, err := s.Reap(false); err != nil || len(res.Removed) != 1 {
		t.Fatalf("reap of an expired legacy key = %+v, %v", res, err)
	}
	os.MkdirAll(dir, 0o700)
	os.WriteFile(filepath.Join(dir, TranscriptName), transcriptBytes(clock.now, "legacy"), 0o600)
	os.Chtimes(filepath.Join(dir, TranscriptName), clock.now, clock.now)
	if res, err := s.Reap(false); err != nil || len(res.Removed) != 0 {
		t.Fatalf("reap of a fresh legacy key = %+v, %v", res, err)
	}
	if _, err := os.Lstat(filepath.Join(dir, db.FileName)); !os.IsNotExist(err) {
		t.Error("reap left a meta.db in a legacy key it kept")
	}
}

func TestInspectChangesNothing(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{Tokens: tok(5), Window: 10}, "a")
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "b")
	before := treeState(t, root)
	var reports []KeyReport
	if err := s.Inspect(10, func(r KeyReport) error { reports = append(reports, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if after := treeState(t, root); after != before {
		t.Fatalf("Inspect changed the tree:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if len(reports) != 1 {
		t.Fatalf("%d reports", len(reports))
	}
	r := reports[0]
	if r.Layout != LayoutDB || r.Gen != 2 || r.ResumeChain == nil || *r.ResumeChain != 1 || len(r.History) != 2 || r.Schema != db.SchemaVersion {
		t.Fatalf("report = %+v", r)
	}
	if r.Transcript == nil || !r.Transcript.HeaderOK || r.Transcript.HeaderVersion != 3 {
		t.Fatalf("transcript report = %+v", r.Transcript)
	}
}

func chainOf(t *testing.T, root, key string) uint64 {
	sc := sidecarsOf(t, root, key)
	if sc.ResumeChain == nil {
		return 0
	}
	return *sc.ResumeChain
}

func contextOf(t *testing.T, root, key string) *db.Context { return sidecarsOf(t, root, key).Context }

func sidecarsOf(t *testing.T, root, key string) db.Sidecars {
	t.Helper()
	var sc db.Sidecars
	withDB(t, root, key, func(tx *db.Tx) (err error) { sc, err = tx.Sidecars(); return err })
	return sc
}

// inFlight reports whether p names a promotion in flight in key's dir.
func inFlight(t *testing.T, root, key string, p *db.Pending) bool {
	t.Helper()
	kd, err := os.Open(filepath.Join(root, key))
	if err != nil {
		t.Fatal(err)
	}
	defer kd.Close()
	return pendingInFlight(kd, p)
}

func historyOf(t *testing.T, root, key string) []db.HistoryEntry {
	t.Helper()
	var h []db.HistoryEntry
	withDB(t, root, key, func(tx *db.Tx) (err error) { h, err = tx.History(0); return err })
	return h
}

func withDB(t *testing.T, root, key string, fn func(*db.Tx) error) {
	t.Helper()
	dir, err := fsat.OpenDir(filepath.Join(root, key))
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	d, err := db.OpenReader(dir, filepath.Join(root, key, db.FileName), db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.View(fn); err != nil {
		t.Fatal(err)
	}
}

// windowsOf is a Windows of the caller's own: the models it names, and no
// other.
type windowsOf map[string]int64

func (w windowsOf) Window(model string) (int64, bool) { v, ok := w[model]; return v, ok }

// A Windows given in Options is the only table a promotion asks: a model
// pi has built in but the caller's Windows does not name gets no window,
// and no reading is stored, as Options.Models says. PromoteRequest.Window's
// doc said the built-in table was asked after Options.Models; a Go worker
// that gave its one custom model lost every built-in model's reading, and
// with it the context bound, without a word.
func TestACallersWindowsIsTheOnlyTableAsked(t *testing.T) {
	root := filepath.Join(t.TempDir(), "sessions")
	s, err := New(root, Options{Models: windowsOf{"acme/custom": 1000}, LockTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "a")
	if c := contextOf(t, root, testKey); c != nil {
		t.Fatalf("a built-in model the caller's Windows does not name got a reading: %+v", c)
	}
	// Falling back to the built-in table is the caller's to write.
	s, err = New(root, Options{Models: fallback{windowsOf{"acme/custom": 1000}}, LockTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "b")
	if c := contextOf(t, root, testKey); c == nil || c.Window != 200000 {
		t.Fatalf("context with a Windows that falls back to the built-in table = %+v", c)
	}
}

// fallback asks its Windows, then pi's built-in models.
type fallback struct{ Windows }

func (f fallback) Window(model string) (int64, bool) {
	if w, ok := f.Windows.Window(model); ok {
		return w, ok
	}
	return models.Builtin().Window(model)
}
