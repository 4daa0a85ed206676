package storetest

import (
	"bytes"
	"errors"
	"testing"
)

// A sequence's transcripts are its own: what ran before it in the process
// (other sequences, the conformance suite's jobs) changes none of their
// bytes, so that a seed that failed in a long run fails alike when run
// again alone, as its message says.
func TestModelTranscriptsDependOnTheSequenceAlone(t *testing.T) {
	staged := func() [][]byte {
		r := &run{t: t, now: modelStart}
		tk := &mTicket{jobDir: t.TempDir()}
		var out [][]byte
		for v := range 16 {
			data, _, err := r.stageFor(tk, v, 1234)
			if err != nil && !errors.Is(err, errLinked) {
				t.Fatal(err)
			}
			out = append(out, data)
			tk.given = data // the next grows from it
		}
		return out
	}
	first := staged()
	turns.Add(987654) // the conformance suite's turns, say
	again := staged()
	for v := range first {
		if !bytes.Equal(first[v], again[v]) {
			t.Fatalf("variant %d: %d bytes, then %d after other turns ran in the process:\n%s\n%s", v, len(first[v]), len(again[v]), first[v], again[v])
		}
	}
}
