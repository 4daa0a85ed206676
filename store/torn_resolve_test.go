package store

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"sessdb/gates"
	"sessdb/store/transcript"
)

// A legacy key's transcript can end in a line with no newline (the legacy
// worker promoted what pi left, a write cut short included). pi appends to
// the file it is given without looking at its end: its first entry is
// glued onto the cut line, and its next load drops both, so the entry after
// it names a parent that is not there and the conversation's history falls
// out of the context (pi 0.58.3 run on such a staged file: 1 message of 7
// on the next resume). resolve stages it with the newline promote adds to
// a torn tail; the ticket describes the bytes staged.
func TestATornTranscriptIsStagedWithItsNewline(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{})
	torn := append(transcriptBytes(clock.now, "legacy turn"), `{"type":"message","id":"0000000`...)
	writeLegacy(t, root, testKey, map[string]string{TranscriptName: string(torn), "pi-version": testPi})
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	want(t, sess, true, gates.Resumed)
	got := staged(t, jobDir)
	if !bytes.Equal(got, append(torn[:len(torn):len(torn)], '\n')) {
		t.Errorf("staged %d bytes ending %q; want the key's %d and a newline", len(got), got[max(0, len(got)-8):], len(torn))
	}

	// The run, as pi writes it: each entry appended whole, the first a
	// child of the last entry pi read.
	run := `{"type":"message","id":"u2","parentId":"00000001","timestamp":"2026-11-01T12:01:00.000Z","message":{"role":"user","content":"next"}}` + "\n" +
		`{"type":"message","id":"a2","parentId":"u2","timestamp":"2026-11-01T12:01:01.000Z","message":{"role":"assistant","content":[{"type":"text","text":"ok"}],"provider":"anthropic","model":"claude-sonnet-4-5","usage":{"input":10,"output":2,"cacheRead":5000,"cacheWrite":0,"totalTokens":5012},"stopReason":"stop"}}` + "\n"
	f, err := os.OpenFile(filepath.Join(jobDir, StagedDirName, TranscriptName), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(run); err != nil {
		t.Fatal(err)
	}
	f.Close()
	res := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi})
	if !res.Promoted || res.Rewritten || res.Run != transcript.Answered {
		t.Fatalf("promote = %+v", res)
	}
	b, err := transcript.Load(bytes.NewReader(readCanonical(t, root, testKey)))
	if err != nil {
		t.Fatal(err)
	}
	if b.Len != 4 || b.Final.Messages != 3 {
		t.Errorf("the promoted transcript's branch holds %d entries, its context %d messages; want 4 and 3: the history before the run is lost", b.Len, b.Final.Messages)
	}
}
