package db

import (
	"bytes"
	"math"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

func mustMarshal(t testing.TB, v any) []byte {
	t.Helper()
	b, err := msgpack.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRecordRoundTrip(t *testing.T) {
	for _, tr := range []Transcript{{Gen: 1}, {Gen: math.MaxUint64, Size: math.MaxInt64, CRC32C: math.MaxUint32, PromotedAt: math.MinInt64}} {
		b, _ := encodeTranscript(tr)
		if got, err := decodeTranscript(b); err != nil || got != tr {
			t.Errorf("transcript %+v -> % x -> %+v, %v", tr, b, got, err)
		}
	}
	for _, c := range []Context{{}, {Tokens: -1, Window: 1 << 40, Model: "prov/модель"}} {
		b, _ := encodeContext(c)
		if got, err := decodeContext(b); err != nil || got != c {
			t.Errorf("context %+v -> %+v, %v", c, got, err)
		}
	}
	for _, p := range []Pending{{Gen: 1}, {Tmp: ".current.jsonl.tmp-1", Size: 1, CRC32C: 2, Gen: 3},
		{Tmp: "t", Gen: 4, Prev: &Transcript{Gen: 1}}, {Gen: 5, Prev: &Transcript{Gen: 4, Size: 10, CRC32C: math.MaxUint32, PromotedAt: -1}}} {
		b, _ := encodePending(p)
		if got, err := decodePending(b); err != nil || !reflect.DeepEqual(got, p) {
			t.Errorf("pending %+v -> %+v, %v", p, got, err)
		}
	}
	for _, h := range []HistoryEntry{
		{Seq: 1 << 63, Gen: 1 << 63, At: 5, Resumed: true, Reason: "context-too-full", Bytes: 9, Chain: 4, Job: "j", TornTail: true},
		{Seq: 9, Gen: 0, Outcome: "superseded", Ticket: "t-1", Run: "errored", BaseGen: 3}, // a refusal on a cold key: g 0 is not g absent
		{Seq: 10, Gen: 4, Ticket: "t-2", Run: "answered", Rewritten: true, BaseGen: math.MaxUint64},
	} {
		b, _ := encodeHistory(h)
		if got, err := decodeHistory(historyKey(h.Seq), b); err != nil || got != h {
			t.Errorf("history %+v -> %+v, %v", h, got, err)
		}
	}
	for _, s := range []string{"", "local", strings.Repeat("x", 70000)} {
		b, _ := encodeString(s)
		if got, err := decodeString(b); err != nil || got != s {
			t.Errorf("string of %d bytes -> %d bytes, %v", len(s), len(got), err)
		}
	}
	for _, n := range []uint64{0, 127, 128, math.MaxUint64} {
		if got, err := decodeUint(encodeUint(n)); err != nil || got != n {
			t.Errorf("uint %d -> %d, %v", n, got, err)
		}
	}
	for _, n := range []int64{0, -1, math.MinInt64, math.MaxInt64} {
		if got, err := decodeInt(encodeInt(n)); err != nil || got != n {
			t.Errorf("int %d -> %d, %v", n, got, err)
		}
	}
}

// Old binaries read newer records: unknown fields are skipped.
func TestDecodeSkipsUnknownFields(t *testing.T) {
	b := mustMarshal(t, map[string]any{"g": 3, "s": 10, "zz": []any{"new", 1}, "c": 7, "p": 9, "y": map[string]int{"a": 1}})
	got, err := decodeTranscript(b)
	if want := (Transcript{Gen: 3, Size: 10, CRC32C: 7, PromotedAt: 9}); err != nil || got != want {
		t.Errorf("decoded %+v, %v; want %+v", got, err, want)
	}
}

// A string sidecar whose length field declares 4 GiB is refused before
// the decoder allocates it (before: 1 MB for a 5-byte value; a record
// is refused the same way, by msgpackmap.Decode).
func TestDecodeStringBelievesNoLengthWithoutBytes(t *testing.T) {
	for _, b := range [][]byte{{0xdb, 0xff, 0xff, 0xff, 0xff}, {0xda, 0xff, 0xff, 'x'}, {0xd9, 0x02, 'x'}} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := decodeString(b)
		runtime.ReadMemStats(&after)
		if err == nil || !strings.Contains(err.Error(), "bytes are left") {
			t.Errorf("% x: %v, want an error saying the bytes are not there", b, err)
		}
		if n := after.TotalAlloc - before.TotalAlloc; n > 64<<10 {
			t.Errorf("% x: decoding allocated %d bytes", b, n)
		}
	}
}

func TestDecodeRejects(t *testing.T) {
	good, _ := encodeTranscript(Transcript{Gen: 1})
	for name, b := range map[string][]byte{
		"empty":          nil,
		"trailing byte":  append(bytes.Clone(good), 0),
		"nil":            {0xc0},
		"array":          mustMarshal(t, []any{1, 2, 3, 4}),
		"string":         mustMarshal(t, "g"),
		"truncated":      good[:len(good)-1],
		"field type":     mustMarshal(t, map[string]any{"g": "one"}),
		"non-string key": mustMarshal(t, map[int]int{1: 2}),
	} {
		if _, err := decodeTranscript(b); err == nil {
			t.Errorf("transcript %s (% x) decoded", name, b)
		}
	}
	for name, b := range map[string][]byte{
		"nil": {0xc0}, "int": {0x01}, "bin": mustMarshal(t, []byte("x")), "trailing": {0xa1, 'x', 0},
	} {
		if _, err := decodeString(b); err == nil {
			t.Errorf("string %s (% x) decoded", name, b)
		}
	}
	for name, b := range map[string][]byte{
		"nil": {0xc0}, "negative": mustMarshal(t, int64(-1)), "string": mustMarshal(t, "1"),
		"float": mustMarshal(t, 1.0), "trailing": {0x01, 0x01}, "empty": nil,
	} {
		if _, err := decodeUint(b); err == nil {
			t.Errorf("uint %s (% x) decoded", name, b)
		}
	}
	if _, err := decodeInt(mustMarshal(t, uint64(math.MaxUint64))); err == nil {
		t.Error("int overflowing int64 decoded")
	}
	if _, err := decodeHistory([]byte{1, 2, 3}, mustMarshal(t, map[string]any{})); err == nil {
		t.Error("history entry with a 3-byte key decoded")
	}
}

// The fuzz targets assert that a decoder never panics and that whatever it
// accepts survives encode and decode unchanged.

func FuzzDecodeTranscript(f *testing.F) {
	seed(f)
	for _, v := range []Transcript{{Gen: 1, Size: 2, CRC32C: 3, PromotedAt: 4}, {Gen: math.MaxUint64, PromotedAt: -1}} {
		b, _ := encodeTranscript(v)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) { roundTrip(t, b, decodeTranscript, encodeTranscript) })
}

func FuzzDecodeContext(f *testing.F) {
	b, _ := encodeContext(Context{Tokens: 160000, Window: 200000, Model: "a/b"})
	f.Add(b)
	seed(f)
	f.Fuzz(func(t *testing.T, b []byte) { roundTrip(t, b, decodeContext, encodeContext) })
}

func FuzzDecodePending(f *testing.F) {
	b, _ := encodePending(Pending{Tmp: ".current.jsonl.tmp-x", Size: 5, CRC32C: 6, Gen: 7})
	f.Add(b)
	b, _ = encodePending(Pending{Tmp: ".current.jsonl.tmp-y", Size: 5, CRC32C: 6, Gen: 8, Prev: &Transcript{Gen: 7, Size: 4, CRC32C: 3, PromotedAt: 2}})
	f.Add(b)
	seed(f)
	f.Fuzz(func(t *testing.T, b []byte) { roundTrip(t, b, decodePending, encodePending) })
}

func FuzzDecodeHistory(f *testing.F) {
	b, _ := encodeHistory(HistoryEntry{At: 1, Resumed: true, Reason: "resumed", Bytes: 3, Chain: 4, Job: "j", TornTail: true})
	f.Add(b)
	b, _ = encodeHistory(HistoryEntry{Gen: 41, Outcome: "superseded", Ticket: "k", Run: "answered", Rewritten: true, BaseGen: 40})
	f.Add(b)
	seed(f)
	key := historyKey(42)
	f.Fuzz(func(t *testing.T, b []byte) {
		roundTrip(t, b, func(b []byte) (HistoryEntry, error) { return decodeHistory(key, b) }, encodeHistory)
	})
}

func FuzzDecodeString(f *testing.F) {
	for _, s := range []string{"", "0.54.2", "(pending)"} {
		b, _ := encodeString(s)
		f.Add(b)
	}
	seed(f)
	f.Fuzz(func(t *testing.T, b []byte) { roundTrip(t, b, decodeString, encodeString) })
}

func FuzzDecodeUint(f *testing.F) {
	for _, n := range []uint64{0, 1, 200, math.MaxUint64} {
		f.Add(encodeUint(n))
	}
	seed(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		roundTrip(t, b, decodeUint, func(n uint64) ([]byte, error) { return encodeUint(n), nil })
	})
}

func FuzzDecodeInt(f *testing.F) {
	for _, n := range []int64{0, -1, math.MinInt64, 1700000000e9} {
		f.Add(encodeInt(n))
	}
	seed(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		roundTrip(t, b, decodeInt, func(n int64) ([]byte, error) { return encodeInt(n), nil })
	})
}

// seed adds inputs every decoder must survive: truncations, huge declared
// lengths, nil, wrong types.
func seed(f *testing.F) {
	for _, b := range [][]byte{
		nil, {0xc0}, {0x80}, {0x81, 0xa1, 'g'}, {0xdf, 0xff, 0xff, 0xff, 0xff},
		{0xdb, 0xff, 0xff, 0xff, 0xff}, {0x81, 0xa1, 'z', 0xdd, 0xff, 0xff, 0xff, 0xff},
		{0x81, 0xa1, 'g', 0xcf, 1, 2, 3, 4, 5, 6, 7, 8}, {0x94, 1, 2, 3, 4},
	} {
		f.Add(b)
	}
}

func roundTrip[T any](t *testing.T, b []byte, decode func([]byte) (T, error), encode func(T) ([]byte, error)) {
	v, err := decode(b)
	if err != nil {
		return
	}
	b2, err := encode(v)
	if err != nil {
		t.Fatalf("decoded %+v from % x but cannot encode it: %v", v, b, err)
	}
	v2, err := decode(b2)
	if err != nil || !reflect.DeepEqual(v2, v) { // Pending.Prev is a pointer
		t.Fatalf("% x -> %+v -> % x -> %+v, %v", b, v, b2, v2, err)
	}
}

// A transcript record no promotion writes (generation 0, a negative size,
// a CRC32C wider than 32 bits) is damage on its way in and out: package db
// neither reads one as a transcript nor writes one, alone or as a pending
// promotion's prev.
func TestATranscriptRecordDescribingNoFileIsDamage(t *testing.T) {
	for _, tr := range []Transcript{{Gen: 0, Size: 5, CRC32C: 1}, {Gen: 1, Size: -1}, {Gen: 1, CRC32C: 1 << 32}, {Gen: 2, Size: 1, CRC32C: math.MaxUint64}} {
		if b, err := encodeTranscript(tr); err == nil {
			t.Errorf("encode %+v = % x, want refused", tr, b)
		}
		if _, err := encodePending(Pending{Gen: 3, Prev: &tr}); err == nil {
			t.Errorf("encode a pending whose prev is %+v: want refused", tr)
		}
		raw := mustMarshal(t, &tr)
		if got, err := decodeTranscript(raw); err == nil {
			t.Errorf("decode %+v = %+v, want refused", tr, got)
		}
		if got, err := decodePending(mustMarshal(t, map[string]any{"t": "x", "g": uint64(3), "v": tr})); err == nil {
			t.Errorf("decode a pending whose prev is %+v = %+v, want refused", tr, got)
		}
		p := Pending{Tmp: "x", Gen: tr.Gen, Size: tr.Size, CRC32C: tr.CRC32C}
		if _, err := encodePending(p); err == nil {
			t.Errorf("encode a pending of %+v: want refused", p)
		}
		if got, err := decodePending(mustMarshal(t, map[string]any{"t": "x", "g": tr.Gen, "s": tr.Size, "c": tr.CRC32C})); err == nil {
			t.Errorf("decode a pending of %+v = %+v, want refused", p, got)
		}
	}
}
