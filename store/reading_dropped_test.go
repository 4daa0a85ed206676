package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sessdb/internal/pientry"
	"testing"

	"github.com/rs/zerolog"

	"sessdb/gates"
	"sessdb/internal/faults"
	"sessdb/store/transcript"
)

// A run's reading whose model has no window the store knows (pi's
// built-in models, Options.Models, or the request's Window) is not
// stored, and the context bound then never judges the conversation. The
// promotion's answer does not change, so the store's log says so: a
// warning session_reading_dropped naming the key, the model and the
// tokens. A reading stored, a run that records no model, or a reading pi
// itself does not know (no usage since a compaction) is no such warning.
func TestAReadingWithNoWindowIsLogged(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	log := &bytes.Buffer{}
	s.opts.Logger = zerolog.New(log)
	dropped := func() []map[string]any {
		t.Helper()
		var events []map[string]any
		for _, line := range bytes.Split(bytes.TrimSpace(log.Bytes()), []byte("\n")) {
			var e map[string]any
			if len(line) == 0 {
				continue
			}
			if err := json.Unmarshal(line, &e); err != nil {
				t.Fatalf("log line %q: %v", line, err)
			}
			if e["message"] == "session_reading_dropped" {
				events = append(events, e)
			}
		}
		log.Reset()
		return events
	}

	// anthropic/claude-sonnet-4-5 is one of pi's built-in models.
	sess, dir, data := contractJob(t, s, testKey, "known")
	stage(t, dir, answeredTurn(data, "1", 1000))
	if res := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi}); !res.Promoted || sidecarsOf(t, root, testKey).Context == nil {
		t.Fatalf("a run on a built-in model: %+v, or no reading", res)
	}
	if e := dropped(); len(e) != 0 {
		t.Fatalf("a stored reading logged %v", e)
	}

	// The same run's answer on a model no table holds.
	onNoSuchModel := func(data []byte, tokens int) []byte {
		usage := fmt.Sprintf(`"usage":{"input":10,"output":5,"cacheRead":0,"cacheWrite":0,"totalTokens":%d}`, tokens)
		return bytes.ReplaceAll(data, []byte(`"model":"claude-sonnet-4-5",`+usage), []byte(`"model":"no-such-model",`+usage))
	}
	sess, dir, data = contractJob(t, s, testKey, "unknown")
	stage(t, dir, onNoSuchModel(answeredTurn(data, "2", 2500), 2500))
	if res := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi}); !res.Promoted {
		t.Fatalf("a run on an unknown model: %+v", res)
	}
	if c := sidecarsOf(t, root, testKey).Context; c != nil {
		t.Fatalf("a reading with no window was stored: %+v", *c)
	}
	want := map[string]any{"level": "warn", "key": testKey, "model": "anthropic/no-such-model", "tokens": float64(2500), "message": "session_reading_dropped"}
	if e := dropped(); len(e) != 1 || !reflect.DeepEqual(e[0], want) {
		t.Fatalf("logged %v; want one %v", e, want)
	}

	// Given the window, the same reading is stored, and nothing is said.
	sess, dir, data = contractJob(t, s, testKey, "window")
	stage(t, dir, onNoSuchModel(answeredTurn(data, "3", 2600), 2600))
	if res := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi, Window: 100000}); !res.Promoted || sidecarsOf(t, root, testKey).Context == nil {
		t.Fatalf("a run on an unknown model, its window given: %+v, or no reading", res)
	}
	if e := dropped(); len(e) != 0 {
		t.Fatalf("a stored reading logged %v", e)
	}

	// Nor is a run that records no model (its prompt never answered): no
	// table has a window for it.
	sess, dir, _ = contractJob(t, s, "0123456789abcdef0123456789abcdef", "unanswered")
	header := []byte(`{"type":"session","version":3,"id":"0b9c3f0e-1111-4a2b-8c3d-123456789abc","timestamp":"2026-11-01T12:00:00.000Z","cwd":"/workspace"}` + "\n")
	stage(t, dir, pientry.Message(header, "u-1", "user", "a prompt", "", 0))
	if res := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi}); !res.Promoted || res.Run != transcript.Unanswered {
		t.Fatalf("an unanswered cold run: %+v", res)
	}
	if e := dropped(); len(e) != 0 {
		t.Fatalf("a run with no model logged %v", e)
	}

	// A reading pi does not know either (a compaction, no usage since)
	// is no reading dropped.
	sess, dir, data = contractJob(t, s, testKey, "compacted")
	data = answeredTurn(data, "4", 2700)
	data = append(data, `{"type":"compaction","id":"cmp-1","parentId":"a-4","timestamp":"2026-11-01T12:00:00.000Z","summary":"s","firstKeptEntryId":"a-4","tokensBefore":2700}`+"\n"...)
	stage(t, dir, data)
	if res := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi}); !res.Promoted || sidecarsOf(t, root, testKey).Context != nil {
		t.Fatalf("a compacted run: %+v, or a reading kept", res)
	}
	if e := dropped(); len(e) != 0 {
		t.Fatalf("an unknown reading logged %v", e)
	}

	// A commit that failed after it landed (here, before its rename) is
	// the key's generation, and its retry a repeat that says nothing: the
	// failed try says it.
	sess, dir, data = contractJob(t, s, testKey, "landed")
	stage(t, dir, onNoSuchModel(answeredTurn(data, "5", 2800), 2800))
	faults.Set(func(p faults.Point) error {
		if p == faults.PromoteAfterCommit {
			return errors.New("the disk went away")
		}
		return nil
	})
	res, err := s.Promote(sess, PromoteRequest{PiVersion: testPi})
	faults.Set(nil)
	if err == nil || res.Promoted {
		t.Fatalf("a commit failed after it landed: %+v, %v; want its error", res, err)
	}
	want["tokens"] = float64(2800)
	if e := dropped(); len(e) != 1 || !reflect.DeepEqual(e[0], want) {
		t.Fatalf("a commit that failed after it landed logged %v; want one %v", e, want)
	}
	if res := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi}); !res.Promoted || !res.Repeat {
		t.Fatalf("the retry of a landed commit: %+v, want a repeat", res)
	}
	if e := dropped(); len(e) != 0 {
		t.Fatalf("a repeat logged %v", e)
	}

	// A commit that lost its compare changed nothing, and dropped nothing:
	// Promote looks again once, and neither try says a word.
	sess, dir, data = contractJob(t, s, testKey, "conflict")
	stage(t, dir, onNoSuchModel(answeredTurn(data, "6", 2900), 2900))
	s.backend = &conflicting{Backend: s.backend}
	if _, err := s.Promote(sess, PromoteRequest{PiVersion: testPi}); !errors.Is(err, ErrConflict) {
		t.Fatalf("a promote whose every commit conflicts: %v, want ErrConflict", err)
	}
	if e := dropped(); len(e) != 0 {
		t.Fatalf("commits that changed nothing logged %v", e)
	}
}
