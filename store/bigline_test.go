package store

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"sessdb/gates"
	"sessdb/store/transcript"
)

// A run whose transcript has a line over transcript.MaxLineBytes, which pi
// loads and sessdb does not read: the run is unknown, never unanswered
// (which --require answered refused as a run cut short, of a run that may
// well have answered), and it has no reading. That is so with no size cap
// and with one above the line; a cap of MaxLineBytes or less refuses the
// file as too-large before it is read.
func TestPromoteALineOverTheScannerBound(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and reads a 64 MiB line three times: 2.5 s, 12 s with -race")
	}
	s, root, clock := newTestStore(t, gates.Bounds{})
	sess, dir, data := contractJob(t, s, testKey, "base")
	stage(t, dir, answeredTurn(data, "1", 1000))
	if res := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi}); !res.Promoted || sidecarsOf(t, root, testKey).Context == nil {
		t.Fatalf("base: %+v, or no reading", res)
	}
	sess, dir, data = contractJob(t, s, testKey, "big")
	size := stageLongLine(t, dir, data)

	// pi 0.58.3 reads this file (../shared/tools/pi-end-usage.mjs): the
	// branch ends in the answer a-2, 1500 tokens of anthropic's model.
	capped := func(max int64) *Store {
		c, err := New(root, Options{Bounds: gates.Bounds{MaxBytes: max}, Now: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if res := mustPromote(t, capped(transcript.MaxLineBytes), sess, PromoteRequest{PiVersion: testPi}); res.Reason != gates.TooLarge {
		t.Fatalf("under a cap of MaxLineBytes: %+v, want too-large", res)
	}
	res := mustPromote(t, capped(size), sess, PromoteRequest{PiVersion: testPi, Require: transcript.Answered})
	if res.Promoted || res.Reason != gates.RunIncomplete || res.Run != transcript.Unknown {
		t.Fatalf("answered required, under a cap above the line: %+v, want run-incomplete with run unknown", res)
	}
	if h := historyOf(t, root, testKey); h[len(h)-1].Outcome != string(gates.RunIncomplete) || h[len(h)-1].Run != string(transcript.Unknown) {
		t.Fatalf("the refusal is recorded as %+v", h[len(h)-1])
	}
	res = mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi})
	if !res.Promoted || res.Gen != 2 || res.Bytes != size || res.Run != transcript.Unknown {
		t.Fatalf("with no cap: %+v, want gen 2 promoted with run unknown", res)
	}
	if h := historyOf(t, root, testKey); h[len(h)-1].Outcome != "" || h[len(h)-1].Run != string(transcript.Unknown) {
		t.Fatalf("the promotion is recorded as %+v", h[len(h)-1])
	}
	if c := sidecarsOf(t, root, testKey).Context; c != nil {
		t.Fatalf("the record keeps a reading, %+v, that no read of this transcript made", *c)
	}
}

// stageLongLine stages given, then a user message pasting an image whose
// data alone is MaxLineBytes bytes, then an answer to it, written as a
// stream (never held whole); it returns the file's size.
func stageLongLine(t *testing.T, jobDir string, given []byte) int64 {
	t.Helper()
	stage(t, jobDir, given)
	f, err := os.OpenFile(filepath.Join(jobDir, StagedDirName, TranscriptName), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	w.WriteString(`{"type":"message","id":"u-2","parentId":"a-1","timestamp":"2026-11-01T12:00:00.000Z","message":{"role":"user","content":[{"type":"text","text":"look"},{"type":"image","data":"`)
	chunk := bytes.Repeat([]byte("A"), 1<<20)
	for range transcript.MaxLineBytes / len(chunk) {
		w.Write(chunk)
	}
	w.WriteString(`","mimeType":"image/png"}],"timestamp":1773134116106}}` + "\n")
	w.WriteString(`{"type":"message","id":"a-2","parentId":"u-2","timestamp":"2026-11-01T12:00:00.000Z","message":{"role":"assistant","content":[{"type":"text","text":"seen"}],"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5","usage":{"input":10,"output":5,"cacheRead":0,"cacheWrite":0,"totalTokens":1500},"stopReason":"stop","timestamp":1773134116106}}` + "\n")
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return st.Size()
}
