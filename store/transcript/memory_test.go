package transcript

import (
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
)

// What Load keeps is bounded by the file: a record per entry that a
// parentId could reach. Entries no parentId can find (no id, a falsy one,
// an object; pi keeps them in its entries all the same) matter only as the
// leaf, so a staged file of 3-byte lines must not cost a 120-byte record
// each: at promote, 8 MiB of "0" lines held 1.4 GB. The reading is still
// pi's: tools/pi-end-usage.mjs gives 1010 tokens and p/m on these lines
// (with 7 fillers of each kind; the count does not change pi's answer).
func TestEntriesNoParentFindsAreNotKept(t *testing.T) {
	fillers := []string{`{}`, `0`, `[]`, `"s"`, `false`, `{"type":"label","id":""}`, `{"type":"label","id":null,"parentId":"u1"}`, `{"type":"custom","id":{},"parentId":"a1"}`, `{"type":"message","parentId":"a1","message":{"role":"user","content":"zzzz"}}`}
	const rounds = 40000
	var sb strings.Builder
	sb.WriteString(hdr + "\n" + piU1 + "\n" + piA1 + "\n")
	for range rounds {
		for _, f := range fillers {
			sb.WriteString(f + "\n")
		}
	}
	sb.WriteString(piU2 + "\n")
	in := sb.String()

	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	heap := func() int64 {
		runtime.GC()
		runtime.GC()
		metrics.Read(sample)
		return int64(sample[0].Value.Uint64())
	}
	base := heap()
	b, err := Load(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	retained := heap() - base
	runtime.KeepAlive(b)
	runtime.KeepAlive(in) // measured from base, which holds it
	if want := int64(rounds*len(fillers) + 3); b.Stats.Entries != want {
		t.Errorf("%d entries, want %d: pi keeps every one", b.Stats.Entries, want)
	}
	if end := b.End(); !end.Known || end.Tokens != 1010 || end.Model != "p/m" || b.Len != 3 {
		t.Errorf("reading %d (known %v), model %q, branch %d; pi: 1010, p/m, 3", end.Tokens, end.Known, end.Model, b.Len)
	}
	t.Logf("retained %d B for a %d B file", retained, len(in))
	if retained > int64(len(in)) {
		t.Errorf("retained %d B for a %d B file of %d entries no parentId can find: a record kept for each", retained, len(in), rounds*len(fillers))
	}
}
