package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/rs/zerolog"

	"sessdb/gates"
)

// cancelledSteps returns the step of each cancel line in log, in order,
// and clears log.
func cancelledSteps(t *testing.T, log *bytes.Buffer, message string) []string {
	t.Helper()
	var out []string
	for _, l := range bytes.Split(bytes.TrimSpace(log.Bytes()), []byte("\n")) {
		var e struct {
			Message string  `json:"message"`
			Step    *string `json:"step"`
		}
		if len(l) == 0 {
			continue
		}
		if err := json.Unmarshal(l, &e); err != nil {
			t.Fatalf("log line %s: %v", l, err)
		}
		if e.Message != message {
			continue
		}
		if e.Step == nil {
			t.Fatalf("%s with no step: %s", message, l)
		}
		out = append(out, *e.Step)
	}
	log.Reset()
	return out
}

// A resolve and a promote given up at each of their looks at ctx in turn
// log the step they were at (session_resolve_cancelled,
// session_promote_cancelled: "step"), each step in the order the call
// passes it: where a Go worker's deadline went (the wait for the key,
// the copy, the commit's last look). Before, the lines named the key and
// the error alone, and the error of a cancel seen between two steps was
// "context canceled", which names none.
func TestACancelLogsTheStepItWasAt(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	log := &bytes.Buffer{}
	s.opts.Logger = zerolog.New(log)
	sess, dir, data := contractJob(t, s, testKey, "first")
	stage(t, dir, answeredTurn(data, "1", 1000))
	if res := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi}); !res.Promoted {
		t.Fatalf("the first promote: %+v", res)
	}

	var resolved []string
	for n := int64(1); ; n++ {
		ctx := &countdown{Context: context.Background()}
		ctx.n.Store(n)
		_, err := s.ResolveContext(ctx, testKey, localJob(), t.TempDir())
		if err == nil {
			break
		}
		if !errors.Is(err, context.Canceled) || n > 50 {
			t.Fatalf("cancelled at look %d: %v", n, err)
		}
		resolved = append(resolved, cancelledSteps(t, log, "session_resolve_cancelled")...)
	}
	if want := []string{"key", "copy", "ticket"}; !slices.Equal(slices.Compact(resolved), want) {
		t.Fatalf("resolves given up logged the steps %q, want %q in order", resolved, want)
	}

	stale, staleDir, staleData := contractJob(t, s, testKey, "stale")
	stage(t, staleDir, answeredTurn(staleData, "stale", 1000))
	sess, dir, data = contractJob(t, s, testKey, "second")
	stage(t, dir, answeredTurn(data, "2", 1000))
	var promoted []string
	for n := int64(1); ; n++ {
		ctx := &countdown{Context: context.Background()}
		ctx.n.Store(n)
		res, err := s.PromoteContext(ctx, sess, PromoteRequest{PiVersion: testPi})
		if err == nil {
			if !res.Promoted {
				t.Fatalf("the promote not cancelled = %+v", res)
			}
			break
		}
		if !errors.Is(err, context.Canceled) || n > 50 {
			t.Fatalf("cancelled at look %d: %+v, %v", n, res, err)
		}
		promoted = append(promoted, cancelledSteps(t, log, "session_promote_cancelled")...)
	}
	if want := []string{"staged", "key", "stage", "commit"}; !slices.Equal(slices.Compact(promoted), want) {
		t.Fatalf("promotes given up logged the steps %q, want %q in order", promoted, want)
	}

	var refused []string
	for n := int64(1); ; n++ {
		ctx := &countdown{Context: context.Background()}
		ctx.n.Store(n)
		res, err := s.PromoteContext(ctx, stale, PromoteRequest{PiVersion: testPi})
		if err == nil {
			if res.Reason != gates.Superseded {
				t.Fatalf("the stale promote not cancelled = %+v", res)
			}
			break
		}
		if !errors.Is(err, context.Canceled) || n > 50 {
			t.Fatalf("cancelled at look %d: %+v, %v", n, res, err)
		}
		refused = append(refused, cancelledSteps(t, log, "session_promote_cancelled")...)
	}
	if want := []string{"staged", "key", "refusal"}; !slices.Equal(slices.Compact(refused), want) {
		t.Fatalf("refusals given up logged the steps %q, want %q in order", refused, want)
	}
}
