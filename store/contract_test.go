package store

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sessdb/internal/pientry"
	"slices"
	"strings"
	"testing"
	"time"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/faults"
	"sessdb/internal/fsat"
	"sessdb/store/transcript"
)

// The job's contract (issue 11): a ticket promotes once, onto the
// generation it was resolved from; the staged file must begin with what
// the job was given; the run's shape is recorded, and may be required.

const testModel = "anthropic/claude-sonnet-4-5"

var testClockStart = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

// answeredTurn appends a user prompt and an assistant answer that ended
// the turn, with a usage of total tokens.
func answeredTurn(data []byte, tag string, total int64) []byte {
	data = pientry.Message(data, "u-"+tag, "user", "prompt "+tag, "", 0)
	return pientry.Message(data, "a-"+tag, "assistant", "answer "+tag, "stop", total)
}

// cycleTurn appends a prompt and an answer that ended the turn, the
// prompt's parentId naming the answer: a branch that loops.
func cycleTurn(data []byte, tag string) []byte {
	data = answeredTurn(data, tag, 50)
	prompt := regexp.MustCompile(`"id":"u-` + tag + `","parentId":(null|"[^"]*")`)
	return prompt.ReplaceAll(data, []byte(`"id":"u-`+tag+`","parentId":"a-`+tag+`"`))
}

// contractJob resolves key as a job with its own id and returns the
// session, its job dir and what it was handed (a fresh header when cold).
func contractJob(t *testing.T, s *Store, key, id string) (Session, string, []byte) {
	t.Helper()
	job := localJob()
	job.ID = id
	sess, jobDir := mustResolve(t, s, key, job)
	data := staged(t, jobDir)
	if len(data) == 0 {
		data = transcriptBytes(s.opts.Now())
	}
	return sess, jobDir, data
}

// tok is a token count for PromoteRequest.Tokens.
func tok(n int64) *int64 { return &n }

// Two jobs resolve one base; whichever promotes first wins, the other is
// superseded (nothing changes, its transcript stays in its job dir, the
// refusal is in the history with its job id). Every order of the two
// resolves and two promotes that has both resolves before either promote
// is one of these two; the sequential orders promote both.
func TestTwoJobsOnOneBase(t *testing.T) {
	for _, firstWins := range []string{"B", "C"} {
		t.Run(firstWins+" promotes first", func(t *testing.T) {
			s, root, _ := newTestStore(t, gates.Bounds{})
			runJob(t, s, testKey, localJob(), PromoteRequest{}, "base")
			sessB, dirB, dataB := contractJob(t, s, testKey, "job-B")
			sessC, dirC, dataC := contractJob(t, s, testKey, "job-C")
			stage(t, dirB, answeredTurn(dataB, "B", 100))
			stage(t, dirC, answeredTurn(dataC, "C", 100))
			winner, loser, loserDir, loserID := sessB, sessC, dirC, "job-C"
			if firstWins == "C" {
				winner, loser, loserDir, loserID = sessC, sessB, dirB, "job-B"
			}
			won := mustPromote(t, s, winner, PromoteRequest{PiVersion: testPi})
			if !won.Promoted || won.Gen != 2 {
				t.Fatalf("first promote = %+v", won)
			}
			before := filesIn(t, filepath.Join(root, testKey))
			delete(before, db.FileName) // it records the refusal
			staged0 := staged(t, loserDir)
			lost := mustPromote(t, s, loser, PromoteRequest{PiVersion: testPi})
			if lost.Promoted || lost.Reason != gates.Superseded || lost.SupersededBy != 2 {
				t.Fatalf("second promote = %+v, want superseded by gen 2", lost)
			}
			if !bytes.Equal(staged(t, loserDir), staged0) {
				t.Fatal("the superseded job's transcript left its job dir")
			}
			if got := readCanonical(t, root, testKey); !bytes.Contains(got, []byte("answer "+firstWins)) {
				t.Fatal("the winner's turn is not the key's transcript")
			}
			h := historyOf(t, root, testKey)
			last := h[len(h)-1]
			if last.Outcome != string(gates.Superseded) || last.Job != loserID || last.Gen != 2 || last.Ticket != loser.Ticket || last.BaseGen != 1 {
				t.Fatalf("the refusal is not in the history: %+v", last)
			}
			// Nothing but that history entry changed: the transcript, the
			// sidecars and the generation are the winner's.
			sc := sidecarsOf(t, root, testKey)
			if sc.Transcript.Gen != 2 || *sc.ResumeChain != 1 {
				t.Fatalf("sidecars after a refusal: gen %d chain %d", sc.Transcript.Gen, *sc.ResumeChain)
			}
			after := filesIn(t, filepath.Join(root, testKey))
			delete(after, db.FileName)
			if !maps.Equal(after, before) {
				t.Fatalf("a refusal changed the key dir's files: %v -> %v", slices.Sorted(maps.Keys(before)), slices.Sorted(maps.Keys(after)))
			}
			// A retry of the loser is superseded again and not recorded twice.
			again := mustPromote(t, s, loser, PromoteRequest{PiVersion: testPi})
			if again.Reason != gates.Superseded || len(historyOf(t, root, testKey)) != len(h) {
				t.Fatalf("retried refusal = %+v, history %d -> %d", again, len(h), len(historyOf(t, root, testKey)))
			}
		})
	}
}

func TestSequentialJobsBothPromote(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	for i := 1; i <= 3; i++ {
		sess, dir, data := contractJob(t, s, testKey, fmt.Sprintf("job-%d", i))
		stage(t, dir, answeredTurn(data, fmt.Sprint(i), 100))
		if res := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi}); !res.Promoted || res.Gen != uint64(i) || res.Run != transcript.Answered {
			t.Fatalf("job %d: %+v", i, res)
		}
	}
}

// A cold ticket is superseded once the key has a transcript: another
// job's cold start got there first.
func TestColdTicketIsSupersededByAFirstPromotion(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	sessA, dirA, dataA := contractJob(t, s, testKey, "A")
	sessB, dirB, dataB := contractJob(t, s, testKey, "B")
	stage(t, dirA, answeredTurn(dataA, "A", 10))
	stage(t, dirB, answeredTurn(dataB, "B", 10))
	if res := mustPromote(t, s, sessA, PromoteRequest{PiVersion: testPi}); !res.Promoted {
		t.Fatalf("A: %+v", res)
	}
	res := mustPromote(t, s, sessB, PromoteRequest{PiVersion: testPi})
	if res.Promoted || res.Reason != gates.Superseded || res.SupersededBy != 1 {
		t.Fatalf("B: %+v", res)
	}
	if got := readCanonical(t, root, testKey); !bytes.Contains(got, []byte("answer A")) {
		t.Fatal("B's cold start replaced A's conversation")
	}
}

// A history entry's base_gen is the generation the ticket was resolved
// from, whatever the verdict: a cold start onto a transcript the key held
// (here, another pi version) names it; only a key that held none records 0.
func TestHistoryRecordsTheTicketsBaseGenWhateverTheVerdict(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	first, dir, data := contractJob(t, s, testKey, "first")
	stage(t, dir, answeredTurn(data, "1", 10))
	if res := mustPromote(t, s, first, PromoteRequest{PiVersion: testPi}); !res.Promoted || res.Gen != 1 {
		t.Fatalf("first promotion: %+v", res)
	}
	job := localJob()
	job.ID, job.PiVersion = "newer-pi", "0.79.0"
	sess, dir := mustResolve(t, s, testKey, job)
	if sess.Resume || sess.Reason != gates.PiVersionChanged || sess.Base.Gen != 1 {
		t.Fatalf("resolve with another pi version: resume %v, reason %s, base gen %d; want a pi-version-changed cold start on base gen 1", sess.Resume, sess.Reason, sess.Base.Gen)
	}
	stage(t, dir, answeredTurn(transcriptBytes(s.opts.Now()), "2", 10))
	if res := mustPromote(t, s, sess, PromoteRequest{PiVersion: job.PiVersion}); !res.Promoted || res.Gen != 2 {
		t.Fatalf("cold start's promotion: %+v", res)
	}
	h := historyOf(t, root, testKey)
	if len(h) != 2 || h[0].BaseGen != 0 || h[1].BaseGen != 1 || h[1].Resumed {
		t.Fatalf("history base gens: %+v; want 0 for the first promotion, 1 for the cold start onto gen 1", h)
	}
}

// A retried promote repeats the first result: no new generation, the chain
// counted once, before and after another job's promotion.
func TestRetriedPromoteRepeats(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{MaxResumeChain: 3})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "base")
	sess, dir, data := contractJob(t, s, testKey, "retrier")
	stage(t, dir, answeredTurn(data, "R", 100))
	first := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi})
	if !first.Promoted || first.Gen != 2 {
		t.Fatalf("first: %+v", first)
	}
	for i := 0; i < 5; i++ {
		again := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi})
		want := first
		want.Repeat = true
		if again != want {
			t.Fatalf("retry %d = %+v, want %+v", i, again, want)
		}
	}
	if sc := sidecarsOf(t, root, testKey); sc.Transcript.Gen != 2 || *sc.ResumeChain != 1 {
		t.Fatalf("after retries: gen %d, chain %d; want 2 and 1", sc.Transcript.Gen, *sc.ResumeChain)
	}
	// Another job moves the key on; the retry still repeats.
	sess2, dir2, data2 := contractJob(t, s, testKey, "next")
	stage(t, dir2, answeredTurn(data2, "N", 100))
	if res := mustPromote(t, s, sess2, PromoteRequest{PiVersion: testPi}); !res.Promoted || res.Gen != 3 {
		t.Fatalf("next job: %+v", res)
	}
	late := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi})
	if !late.Repeat || late.Gen != 2 || late.Bytes != first.Bytes {
		t.Fatalf("retry after another promotion = %+v", late)
	}
	if sc := sidecarsOf(t, root, testKey); sc.Transcript.Gen != 3 || *sc.ResumeChain != 2 {
		t.Fatalf("final: gen %d chain %d", sc.Transcript.Gen, *sc.ResumeChain)
	}
	// One real delivery each: the chain bound of 3 still resumes.
	sess3, _ := mustResolve(t, s, testKey, localJob())
	want(t, sess3, true, gates.Resumed)
}

func TestTicketForAnotherRootWritesNothing(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	sess, dir, data := contractJob(t, s, testKey, "A")
	stage(t, dir, answeredTurn(data, "A", 10))
	otherRoot := filepath.Join(t.TempDir(), "other-sessions")
	other, err := New(otherRoot, Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = other.Promote(sess, PromoteRequest{PiVersion: testPi})
	if !errors.Is(err, ErrWrongRoot) {
		t.Fatalf("promote into another root: %v, want ErrWrongRoot", err)
	}
	if _, err := os.Stat(otherRoot); !os.IsNotExist(err) {
		t.Fatal("the other root was created")
	}
	if _, err := os.Stat(root); !os.IsNotExist(err) {
		t.Fatal("the ticket's own root was written")
	}
	// Another spelling of the same root is the same root.
	os.MkdirAll(root, 0o700)
	link := filepath.Join(t.TempDir(), "link")
	os.Symlink(root, link)
	same, _ := New(link, Options{})
	if res, err := same.Promote(sess, PromoteRequest{PiVersion: testPi}); err != nil || !res.Promoted {
		t.Fatalf("promote through a link to the same root: %+v %v", res, err)
	}
}

// The staged file must begin with exactly the bytes the job was given.
func TestRewrittenPrefixIsRefused(t *testing.T) {
	cases := map[string]func(given []byte) []byte{
		"an inserted line": func(g []byte) []byte {
			i := bytes.IndexByte(g, '\n') + 1
			return answeredTurn(append(append(bytes.Clone(g[:i]), entryLine("inserted")...), g[i:]...), "x", 10)
		},
		"a changed byte": func(g []byte) []byte {
			b := answeredTurn(g, "x", 10)
			i := bytes.Index(b, []byte("base"))
			b[i] = 'B'
			return b
		},
		"a truncation":     func(g []byte) []byte { return g[:len(g)-10] },
		"a different file": func(g []byte) []byte { return answeredTurn(transcriptBytes(testClockStart), "other", 10) },
	}
	for name, rewrite := range cases {
		t.Run(name, func(t *testing.T) {
			s, root, _ := newTestStore(t, gates.Bounds{})
			runJob(t, s, testKey, localJob(), PromoteRequest{}, "base")
			sess, dir, data := contractJob(t, s, testKey, "rewriter")
			stage(t, dir, rewrite(data))
			before := readCanonical(t, root, testKey)
			res := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi})
			if res.Promoted || res.Reason != gates.TranscriptRewritten {
				t.Fatalf("promote = %+v, want transcript-rewritten", res)
			}
			if !bytes.Equal(readCanonical(t, root, testKey), before) || sidecarsOf(t, root, testKey).Transcript.Gen != 1 {
				t.Fatal("a refused rewrite changed the key")
			}
			if h := historyOf(t, root, testKey); h[len(h)-1].Outcome != string(gates.TranscriptRewritten) {
				t.Fatalf("the refusal is not in the history: %+v", h[len(h)-1])
			}
			res = mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi, AllowRewrite: true})
			if !res.Promoted || !res.Rewritten || res.Gen != 2 {
				t.Fatalf("promote --allow-rewrite = %+v", res)
			}
			if h := historyOf(t, root, testKey); !h[len(h)-1].Rewritten || h[len(h)-1].Outcome != "" {
				t.Fatalf("the history does not say it was rewritten: %+v", h[len(h)-1])
			}
		})
	}
}

// Each shape of run is recorded; --require answered refuses the others.
func TestRunShapes(t *testing.T) {
	cases := []struct {
		name string
		add  func(given []byte) []byte
		run  transcript.Shape
	}{
		{"answered", func(g []byte) []byte { return answeredTurn(g, "1", 50) }, transcript.Answered},
		{"errored", func(g []byte) []byte {
			return pientry.Message(pientry.Message(g, "u1", "user", "q", "", 0), "a1", "assistant", "", "error", 0)
		}, transcript.Errored},
		{"aborted", func(g []byte) []byte {
			return pientry.Message(pientry.Message(g, "u1", "user", "q", "", 0), "a1", "assistant", "", "aborted", 0)
		}, transcript.Errored},
		{"a user prompt left unanswered", func(g []byte) []byte { return pientry.Message(g, "u1", "user", "q", "", 0) }, transcript.Unanswered},
		{"a tool result last", func(g []byte) []byte {
			g = pientry.Message(pientry.Message(g, "u1", "user", "q", "", 0), "a1", "assistant", "calling", "toolUse", 40)
			return pientry.Message(g, "t1", "toolResult", "output", "", 0)
		}, transcript.Unanswered},
		{"an assistant asking for tools", func(g []byte) []byte {
			return pientry.Message(pientry.Message(g, "u1", "user", "q", "", 0), "a1", "assistant", "calling", "toolUse", 40)
		}, transcript.Unanswered},
		{"nothing appended", func(g []byte) []byte { return g }, transcript.Unchanged},
		// An answer whose branch loops back to it: pi would loop loading
		// it, and sessdb cannot tell how the run ended, nor say it was
		// cut short.
		{"a parentId cycle", func(g []byte) []byte { return cycleTurn(g, "c") }, transcript.Unknown},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, root, _ := newTestStore(t, gates.Bounds{})
			runJob(t, s, testKey, localJob(), PromoteRequest{}, "base")
			sess, dir, data := contractJob(t, s, testKey, "shape")
			stage(t, dir, c.add(data))
			if c.run != transcript.Answered {
				res := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi, Require: transcript.Answered})
				if res.Promoted || res.Reason != gates.RunIncomplete || res.Run != c.run {
					t.Fatalf("required answered: %+v, want run-incomplete with run %s", res, c.run)
				}
				if sidecarsOf(t, root, testKey).Transcript.Gen != 1 {
					t.Fatal("a refused run changed the key")
				}
			}
			res := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi})
			if !res.Promoted || res.Run != c.run {
				t.Fatalf("promote = %+v, want run %s", res, c.run)
			}
			if h := historyOf(t, root, testKey); h[len(h)-1].Run != string(c.run) {
				t.Fatalf("history records run %q", h[len(h)-1].Run)
			}
		})
	}
}

// commitWithoutRename promotes "after" over "before" and stops the
// promotion between its commit and its rename, as a crash would. It
// returns the temp's path.
func commitWithoutRename(t *testing.T, s *Store, root string) string {
	t.Helper()
	return commitWithoutRenameAt(t, s, root, testKey)
}

// commitWithoutRenameAt is commitWithoutRename for key.
func commitWithoutRenameAt(t *testing.T, s *Store, root, key string) string {
	t.Helper()
	runJob(t, s, key, localJob(), PromoteRequest{}, "before")
	sess, jobDir := mustResolve(t, s, key, localJob())
	stage(t, jobDir, append(staged(t, jobDir), entryLine("after")...))
	faults.Set(func(p faults.Point) error {
		if p == faults.PromoteAfterCommit {
			return errors.New("crash")
		}
		return nil
	})
	if res, _ := s.Promote(sess, PromoteRequest{PiVersion: testPi}); res.Promoted {
		t.Fatal("the promotion landed")
	}
	faults.Set(nil)
	temps, _ := filepath.Glob(filepath.Join(root, key, tmpPrefix+"*"))
	if len(temps) != 1 {
		t.Fatalf("%d temps after the commit", len(temps))
	}
	return temps[0]
}

// A committed promotion whose temp is lost before its rename: a reader
// falls back to the generation before it, if that is what is in place, and
// a job resolved from it promotes onto it (issue 15, item 8).
func TestLostPendingTempFallsBackToThePreviousGeneration(t *testing.T) {
	for name, lose := range map[string]func(string){
		"gone":    func(p string) { os.Remove(p) },
		"damaged": func(p string) { b, _ := os.ReadFile(p); b[len(b)-3] ^= 0xff; os.WriteFile(p, b, 0o600) },
	} {
		t.Run(name, func(t *testing.T) {
			s, root, _ := newTestStore(t, gates.Bounds{})
			lose(commitWithoutRename(t, s, root))
			sess, jobDir := mustResolve(t, s, testKey, localJob())
			want(t, sess, true, gates.Resumed)
			if got := markerOf(staged(t, jobDir), 1); got != "before" || sess.Gen() != 1 {
				t.Fatalf("resumed %q at gen %d, want before at gen 1", got, sess.Gen())
			}
			stage(t, jobDir, append(staged(t, jobDir), entryLine("next")...))
			res := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi})
			if !res.Promoted || res.Gen != 3 {
				t.Fatalf("promote onto the fallback = %+v, want gen 3 (gen 2 was lost, never reused)", res)
			}
			if got := markerOf(readCanonical(t, root, testKey), 1); got != "next" {
				t.Fatalf("the key holds %q", got)
			}
		})
	}
}

func TestLostPendingTempAndAReplacedTranscriptIsPromotionLost(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	tmp := commitWithoutRename(t, s, root)
	b, _ := os.ReadFile(tmp)
	b[len(b)-3] ^= 0xff
	os.WriteFile(tmp, b, 0o600)
	os.WriteFile(filepath.Join(root, testKey, TranscriptName), transcriptBytes(testClockStart, "out of band"), 0o600)
	sess, _ := mustResolve(t, s, testKey, localJob())
	want(t, sess, false, gates.PromotionLost)
}

// A temp that is gone, as against damaged, cannot be told from a
// promotion that landed and was then replaced out of band: what is in
// place is judged against the record alone, transcript-replaced.
func TestGoneTempAndAReplacedTranscriptIsTranscriptReplaced(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	os.Remove(commitWithoutRename(t, s, root))
	os.WriteFile(filepath.Join(root, testKey, TranscriptName), transcriptBytes(testClockStart, "out of band"), 0o600)
	sess, _ := mustResolve(t, s, testKey, localJob())
	want(t, sess, false, gates.TranscriptReplaced)
}

// A reading over its window is stored as pi reported it, and flagged.
func TestReadingOverItsWindowIsKeptAndFlagged(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{Tokens: tok(181550), Window: 100000}, "big")
	r := inspectOne(t, s, testKey, InspectOptions{})
	if c := r.Context; c == nil || c.Tokens != 181550 || c.Window != 100000 || !c.OverWindow || *c.Pct != 181 {
		t.Fatalf("dump reports %+v", r.Context)
	}
}

// After a repair moves a damaged meta.db aside, the key says so until its
// next promotion, instead of reading as unstamped (pi-version-changed).
func TestMovedAsideMetaDBIsNamed(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "a")
	kd := filepath.Join(root, testKey)
	if err := os.Rename(filepath.Join(kd, db.FileName), filepath.Join(kd, AsidePrefix+"20261201T000000Z")); err != nil {
		t.Fatal(err)
	}
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	want(t, sess, false, gates.MetaMovedAside)
	stage(t, jobDir, transcriptBytes(testClockStart, "fresh"))
	if res := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi}); !res.Promoted {
		t.Fatalf("promote: %+v", res)
	}
	sess, _ = mustResolve(t, s, testKey, localJob())
	want(t, sess, true, gates.Resumed)
}

// Every order of two jobs' resolves and promotes on one key (each job
// resolves before it promotes): a job that resolved before the other's
// promotion landed is superseded by it; one that resolved after promotes
// onto it. Either way the key ends holding the turns of the promotions
// that landed, in order, and the history names the refusal.
func TestEveryInterleavingOfTwoJobs(t *testing.T) {
	for _, order := range []string{"R1 R2 P1 P2", "R1 R2 P2 P1", "R1 P1 R2 P2", "R2 R1 P1 P2", "R2 R1 P2 P1", "R2 P2 R1 P1"} {
		t.Run(order, func(t *testing.T) {
			s, root, _ := newTestStore(t, gates.Bounds{})
			runJob(t, s, testKey, localJob(), PromoteRequest{}, "base")
			sess := map[byte]Session{}
			dir := map[byte]string{}
			data := map[byte][]byte{}
			landed := map[byte]bool{}
			var wantLanded []byte
			for _, step := range strings.Fields(order) {
				j := step[1]
				switch step[0] {
				case 'R':
					sess[j], dir[j], data[j] = contractJob(t, s, testKey, "job-"+string(j))
					stage(t, dir[j], answeredTurn(data[j], string(j), 100))
				case 'P':
					// The job's base is what the key held when it resolved;
					// it lands if no promotion landed since.
					wantLand := true
					for o, ok := range landed {
						if ok && o != j && resolvedBefore(order, j, o) {
							wantLand = false
						}
					}
					res := mustPromote(t, s, sess[j], PromoteRequest{PiVersion: testPi})
					if res.Promoted != wantLand || (!wantLand && res.Reason != gates.Superseded) {
						t.Fatalf("%s: promote = %+v, want landed %v", step, res, wantLand)
					}
					landed[j] = res.Promoted
					if res.Promoted {
						wantLanded = append(wantLanded, j)
					}
				}
			}
			final := string(readCanonical(t, root, testKey))
			rest := final
			for _, j := range wantLanded {
				i := strings.Index(rest, "answer "+string(j))
				if i < 0 {
					t.Fatalf("the final transcript lacks job %c's turn, or has it out of order", j)
				}
				rest = rest[i:]
			}
			if len(wantLanded) == 1 {
				h := historyOf(t, root, testKey)
				if last := h[len(h)-1]; last.Outcome != string(gates.Superseded) {
					t.Fatalf("the refusal is not the last history entry: %+v", last)
				}
			}
		})
	}
}

// resolvedBefore reports whether job j resolved before job o promoted, in
// an order of steps like "R1 R2 P1 P2".
func resolvedBefore(order string, j, o byte) bool {
	return strings.Index(order, "R"+string(j)) < strings.Index(order, "P"+string(o))
}

// filesIn lists dir's entries with their bytes, for a key dir's contents
// before and after an operation that must change nothing in it (the dir's
// own mtime aside).
func filesIn(t *testing.T, dir string) map[string]string {
	t.Helper()
	names, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, n := range names {
		b, _ := os.ReadFile(filepath.Join(dir, n.Name()))
		out[n.Name()] = string(b)
	}
	return out
}

// A promotion that writes nothing leaves no meta.db behind. The key's
// exclusive lock needs one, but a refusal on a key with no record (a
// legacy key whose transcript was replaced, a new key's incomplete run)
// must leave the key dir as it found it: nothing in the key dir changes,
// and a legacy key must not turn into a db key without stamps.
func TestAPromotionThatWritesNothingLeavesNoMetaDB(t *testing.T) {
	t.Run("legacy key, superseded", func(t *testing.T) {
		s, root, clock := newTestStore(t, gates.Bounds{})
		dir := filepath.Join(root, testKey)
		writeLegacy(t, root, testKey, map[string]string{
			TranscriptName: string(transcriptBytes(clock.now)), "venue": "local", "pi-version": testPi, "resume-chain": "2",
		})
		sess, jobDir := mustResolve(t, s, testKey, localJob())
		want(t, sess, true, gates.Resumed)
		stage(t, jobDir, answeredTurn(staged(t, jobDir), "job", 10))
		// The legacy worker replaces the transcript meanwhile, by rename.
		replaced := filepath.Join(t.TempDir(), "replaced")
		os.WriteFile(replaced, transcriptBytes(clock.now, entryLine("legacy worker")), 0o600)
		if err := os.Rename(replaced, filepath.Join(dir, TranscriptName)); err != nil {
			t.Fatal(err)
		}
		before := filesIn(t, dir)
		res := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi})
		if res.Promoted || res.Reason != gates.Superseded {
			t.Fatalf("promote = %+v, want superseded", res)
		}
		if after := filesIn(t, dir); !maps.Equal(after, before) {
			t.Fatalf("key dir changed by a refusal: %d entries before, %d after (%v)", len(before), len(after), slices.Sorted(maps.Keys(after)))
		}
		r := inspectOne(t, s, testKey, InspectOptions{})
		if r.Layout != LayoutLegacy || r.PiVersion == nil || *r.PiVersion != testPi || r.ResumeChain == nil || *r.ResumeChain != 2 {
			t.Fatalf("dump after the refusal: layout %s, pi version %v, chain %v; want the legacy key's", r.Layout, r.PiVersion, r.ResumeChain)
		}
	})
	t.Run("new key, run incomplete", func(t *testing.T) {
		s, root, _ := newTestStore(t, gates.Bounds{})
		sess, jobDir, data := contractJob(t, s, testKey, "cold")
		stage(t, jobDir, pientry.Message(data, "u1", "user", "never answered", "", 0))
		res := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi, Require: transcript.Answered})
		if res.Promoted || res.Reason != gates.RunIncomplete {
			t.Fatalf("promote = %+v, want run-incomplete", res)
		}
		if got := filesIn(t, filepath.Join(root, testKey)); len(got) != 0 {
			t.Fatalf("a refused first promotion left %v in the key dir", slices.Sorted(maps.Keys(got)))
		}
		// The key is as new: the same job promotes when not refused.
		if res := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi}); !res.Promoted || res.Gen != 1 {
			t.Fatalf("promote without --require = %+v", res)
		}
	})
}

// A resume chain at the largest uint64 saturates instead of wrapping to 0
// (issue 15): the next resumed promotion keeps it there, and a chain bound
// still refuses the key.
func TestResumeChainSaturates(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "base")
	kd, err := fsat.OpenDir(filepath.Join(root, testKey))
	if err != nil {
		t.Fatal(err)
	}
	defer kd.Close()
	d, err := db.OpenWriter(kd, filepath.Join(root, testKey, db.FileName), db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = d.Update(func(tx *db.Tx) error { return tx.PutResumeChain(math.MaxUint64) })
	d.Close()
	if err != nil {
		t.Fatal(err)
	}
	sess, dir, data := contractJob(t, s, testKey, "at-the-top")
	want(t, sess, true, gates.Resumed)
	stage(t, dir, answeredTurn(data, "top", 10))
	if res := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi}); !res.Promoted {
		t.Fatalf("promote = %+v", res)
	}
	if c := *sidecarsOf(t, root, testKey).ResumeChain; c != math.MaxUint64 {
		t.Fatalf("resume chain after a resumed promotion from 2^64-1 = %d, want 2^64-1", c)
	}
	var bounded *Store
	bounded, err = New(root, Options{Bounds: gates.Bounds{MaxResumeChain: 3}, Now: s.opts.Now, LockTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	sess, _ = mustResolve(t, bounded, testKey, localJob())
	want(t, sess, false, gates.ResumeChainTooLong)
}

// A reading is stamped with its model in the normalised form the job's
// takes (legacy.NormaliseModel), whatever case pi wrote it in, so the
// context rung matches them: a model id with capitals
// (huggingface/Qwen/...) kept its bound off before (found by an audit).
func TestContextBoundHoldsForAModelIDWithCapitals(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{MaxContextPct: 80})
	const model = "huggingface/Qwen/Qwen3-Coder-Next"
	data := bytes.Replace(transcriptBytes(clock.now), []byte(`"provider":"anthropic","modelId":"claude-sonnet-4-5"`), []byte(`"provider":"huggingface","modelId":"Qwen/Qwen3-Coder-Next"`), 1)
	job := localJob()
	job.Model = model
	sess, dir := mustResolve(t, s, testKey, job)
	stage(t, dir, append(data, entryLine("full")...))
	if res := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi, Tokens: tok(90), Window: 100}); !res.Promoted {
		t.Fatalf("promote = %+v", res)
	}
	if c := contextOf(t, root, testKey); c == nil || c.Model != "huggingface/qwen/qwen3-coder-next" {
		t.Fatalf("reading = %+v, want its model in the job's normalised form", c)
	}
	for _, m := range []string{model, "HuggingFace/qwen/qwen3-coder-next"} {
		job.Model = m
		sess, _ := mustResolve(t, s, testKey, job)
		want(t, sess, false, gates.ContextTooFull)
	}
	v := inspectOne(t, s, testKey, InspectOptions{Job: &job}).Verdict
	if v.Reason != string(gates.ContextTooFull) {
		t.Fatalf("dump's verdict for the job = %+v, want context-too-full", v)
	}
}

// A ticket that promoted once, given again with another transcript in
// its job dir (a job that ran pi a second time after its promote, a job
// dir reused without a resolve), is no retry: the first promotion is not
// this transcript, and saying "promoted" would acknowledge work the key
// never got. It is superseded by its own promotion, and nothing changes.
// Before, both were repeats: promoted, with the first run's bytes.
func TestTicketGivenAnotherTranscriptIsNoRepeat(t *testing.T) {
	for _, c := range []struct {
		name string
		next func(first []byte) []byte
	}{
		{"grown", func(first []byte) []byte { return answeredTurn(first, "again", 200) }},
		{"same size", func(first []byte) []byte {
			b := bytes.Clone(first)
			i := bytes.LastIndex(b, []byte("answer R"))
			b[i+len("answer ")] = 'S'
			return b
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, root, _ := newTestStore(t, gates.Bounds{})
			runJob(t, s, testKey, localJob(), PromoteRequest{}, "base")
			sess, dir, data := contractJob(t, s, testKey, "twice")
			first := answeredTurn(data, "R", 100)
			stage(t, dir, first)
			if res := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi}); !res.Promoted || res.Gen != 2 {
				t.Fatalf("first: %+v", res)
			}
			next := c.next(first)
			stage(t, dir, next)
			res := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi})
			if res.Promoted || res.Repeat || res.Reason != gates.Superseded || res.SupersededBy != 2 {
				t.Fatalf("the same ticket with another transcript = %+v; want superseded by gen 2", res)
			}
			if got := readCanonical(t, root, testKey); !bytes.Equal(got, first) {
				t.Fatal("the key no longer holds the first promotion")
			}
			if !bytes.Equal(staged(t, dir), next) {
				t.Fatal("the job's transcript was not left in its job dir")
			}
			// The same transcript again is still a retry.
			stage(t, dir, first)
			if again := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi}); !again.Promoted || !again.Repeat || again.Gen != 2 {
				t.Fatalf("a retry with the first transcript = %+v", again)
			}
		})
	}
}
