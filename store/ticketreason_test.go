package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sessdb/gates"
)

// setTicketReason rewrites the reason in jobDir's ticket, every other byte
// of its JSON as resolve wrote it.
func setTicketReason(t *testing.T, jobDir string, reason gates.Reason) {
	t.Helper()
	p := filepath.Join(jobDir, TicketName)
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(mustRead(t, p), &fields); err != nil {
		t.Fatal(err)
	}
	r, err := json.Marshal(reason)
	if err != nil {
		t.Fatal(err)
	}
	fields["reason"] = r
	b, err := json.Marshal(fields)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// A ticket's reason is recorded in the key's history as its resolve's. A
// promote's outcome, or a value that is no token (any bytes, as long as
// a ticket may be), is refused as a bad ticket by ReadTicket, and by
// Promote given such a Session by hand: nothing in the sessions root
// changes, and the error never quotes the value. Before, each promoted,
// its history entry saying the run resolved "promoted", or 200 KiB of
// whatever the ticket held.
func TestATicketsReasonIsOneAResolveGives(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "a")
	cold := localJob()
	cold.PiVersion = "0.1.0" // pi-version-changed: a cold start
	sess, jobDir := mustResolve(t, s, testKey, cold)
	want(t, sess, false, gates.PiVersionChanged)
	stage(t, jobDir, append(transcriptBytes(s.opts.Now()), entryLine("a cold run")...))
	ticket := mustRead(t, filepath.Join(jobDir, TicketName))
	before := treeState(t, root)

	for _, reason := range []gates.Reason{
		gates.Promoted, gates.Superseded, gates.PromoteFailed, gates.TranscriptRewritten, gates.RunIncomplete,
		"SECRET absent", "absent\n", "absent\x1b[31m", "Absent", gates.Reason(strings.Repeat("SECRET", 200<<10/6)),
	} {
		name := string(reason)
		if len(name) > 40 {
			name = name[:40] + "…"
		}
		setTicketReason(t, jobDir, reason)
		if _, err := ReadTicket(jobDir); !errors.Is(err, ErrBadTicket) || strings.Contains(err.Error(), "SECRET") {
			t.Errorf("ReadTicket of a ticket whose reason is %q: %v, want ErrBadTicket quoting nothing", name, err)
		}
		edited := sess
		edited.Reason = reason
		res, err := s.Promote(edited, PromoteRequest{PiVersion: cold.PiVersion})
		if !errors.Is(err, ErrBadTicket) || res.Promoted || strings.Contains(err.Error(), "SECRET") {
			t.Errorf("Promote of a Session whose reason is %q: %+v, %v, want ErrBadTicket quoting nothing", name, res, err)
		}
		if after := treeState(t, root); after != before {
			t.Fatalf("reason %q: the sessions root changed:\n%s\nwas\n%s", name, after, before)
		}
	}

	// The ticket as resolve wrote it still promotes, its reason recorded.
	if err := os.WriteFile(filepath.Join(jobDir, TicketName), ticket, 0o600); err != nil {
		t.Fatal(err)
	}
	back, err := ReadTicket(jobDir)
	if err != nil {
		t.Fatal(err)
	}
	if res := mustPromote(t, s, back, PromoteRequest{PiVersion: cold.PiVersion}); !res.Promoted {
		t.Fatalf("the ticket as written: %+v", res)
	}
	h := historyOf(t, root, testKey)
	if got := h[len(h)-1].Reason; got != string(gates.PiVersionChanged) {
		t.Errorf("the history records the resolve's reason as %q, want %q", got, gates.PiVersionChanged)
	}
}

// A reason this sessdb does not name, but which has a token's form, is a
// newer sessdb's (a binary rolled back under running jobs): its ticket
// promotes, the history records it as it is, and stats counts it unknown.
func TestATicketWithANewerSessdbsReasonPromotes(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "a")
	cold := localJob()
	cold.PiVersion = "0.1.0"
	_, jobDir := mustResolve(t, s, testKey, cold)
	stage(t, jobDir, append(transcriptBytes(s.opts.Now()), entryLine("a cold run")...))
	const newer = gates.Reason("some-newer-rung2")
	setTicketReason(t, jobDir, newer)
	sess, err := ReadTicket(jobDir)
	if err != nil {
		t.Fatalf("a newer sessdb's reason: %v", err)
	}
	if res := mustPromote(t, s, sess, PromoteRequest{PiVersion: cold.PiVersion}); !res.Promoted {
		t.Fatalf("a newer sessdb's reason: %+v", res)
	}
	h := historyOf(t, root, testKey)
	if got := h[len(h)-1].Reason; got != string(newer) {
		t.Errorf("the history records %q, want %q", got, newer)
	}
	st, err := s.Stats(t.Context(), StatsOptions{Window: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	unknown := st.Promotions.Count(func(k PromotionKind) bool { return k.Start == statUnknown })
	if unknown != 1 {
		t.Errorf("stats counts %d promotions started %q, want 1 (%v)", unknown, statUnknown, st.Promotions.Entries)
	}
	if !bytes.Contains(mustRead(t, filepath.Join(root, testKey, TranscriptName)), []byte("a cold run")) {
		t.Error("the key does not hold the promoted run")
	}
}
