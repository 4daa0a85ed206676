package etcdmeta

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"regexp"
	"runtime"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// recordSeeds are values as this binary writes them, as an older or newer
// one would (fields it does not know, none of the optional ones, another
// schema), and damage every decoder must survive: nothing, nil, an
// array, a cut, declared lengths of 4 GiB with nothing behind them.
func recordSeeds(f *testing.F, values ...[]byte) {
	mustMarshal := func(v any) []byte {
		b, err := msgpack.Marshal(v)
		if err != nil {
			f.Fatal(err)
		}
		return b
	}
	for _, b := range values {
		f.Add(b)
		f.Add(b[:len(b)/2])
		f.Add(append(bytes.Clone(b), 0xc0))
	}
	for _, b := range [][]byte{
		mustMarshal(map[string]any{"v": 1, "pv": "0.58.3", "zz": []int{1, 2}, "t": map[string]any{"g": 3, "f": "x", "new": true}}),
		mustMarshal(map[string]any{"v": SchemaVersion + 1, "pv": "1"}),
		mustMarshal(map[string]any{"v": 1, "t": "not a map"}),
		mustMarshal(map[string]any{"g": int64(-1), "a": uint64(math.MaxUint64), "b": 1.5}),
		nil, {0xc0}, {0x80}, {0x90}, {0x81, 0xa1, 'v'},
		{0xdf, 0xff, 0xff, 0xff, 0xff},
		{0x81, 0xa1, 't', 0xdf, 0xff, 0xff, 0xff, 0xff},
		{0x82, 0xa1, 'v', 0x01, 0xa2, 'p', 'v', 0xdb, 0xff, 0xff, 0xff, 0xff},
		{0x82, 0xa1, 'v', 0x01, 0xa1, 'z', 0xdd, 0xff, 0xff, 0xff, 0xff},
		{0x82, 0xa1, 'v', 0x01, 0xa1, 'z', 0xc6, 0xff, 0xff, 0xff, 0xff},
		{0x82, 0xa1, 'v', 0x01, 0xa1, 'z', 0xc9, 0xff, 0xff, 0xff, 0xff, 0x01},
	} {
		f.Add(b)
	}
}

// allocBound is the most a decode of b may allocate: a length field
// declaring 4 GiB must not be believed before the bytes are there.
func allocBound(b []byte) uint64 { return 64*uint64(len(b)) + 1<<20 }

// decodeAllocating runs decode and returns what it allocated, in bytes.
func decodeAllocating(decode func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	decode()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// FuzzDecodeRecord gives the record decoder any value a key's record/<key>
// could hold in etcd: another binary's, or damage. It decodes, or fails
// with ErrDamaged or ErrNewerSchema (never both); it never allocates more
// than allocBound; and a record it decodes, with its hint, encodes to
// bytes that decode to the same record and hint and encode again to the
// same bytes.
func FuzzDecodeRecord(f *testing.F) {
	var values [][]byte
	key := newKey()
	for _, r := range []Record{{}, record(key, 1), record(key, math.MaxUint64), {PiVersion: ptr(""), ResumeChain: ptr(uint64(0))},
		{Transcript: &Transcript{Gen: 9, Size: -1, PromotedAt: math.MinInt64}, HistoryGen: 12, Context: &Context{Tokens: -1}}} {
		for _, seq := range []uint64{0, 7, math.MaxUint64 - 1} {
			b, err := encodeRecord(r, seq)
			if err != nil {
				f.Fatal(err)
			}
			values = append(values, b)
		}
	}
	recordSeeds(f, values...)
	f.Fuzz(func(t *testing.T, b []byte) {
		var r Record
		var hint uint64
		var err error
		if n := decodeAllocating(func() { r, hint, err = decodeRecordHint(b) }); n > allocBound(b) {
			t.Fatalf("decoding %d bytes allocated %d", len(b), n)
		}
		if err != nil {
			if errors.Is(err, ErrDamaged) == errors.Is(err, ErrNewerSchema) {
				t.Fatalf("refused as %v: not one of ErrDamaged or ErrNewerSchema", err)
			}
			return
		}
		enc, err := encodeRecord(r, hint)
		if err != nil {
			t.Fatalf("a decoded record does not encode: %v", err)
		}
		r2, hint2, err := decodeRecordHint(enc)
		if err != nil || hint2 != hint || !reflect.DeepEqual(r2, r) {
			t.Fatalf("encoded and decoded as %+v (hint %d), %v; want %+v (hint %d)", r2, hint2, err, r, hint)
		}
		if enc2, _ := encodeRecord(r2, hint2); !bytes.Equal(enc2, enc) {
			t.Fatalf("encoding is not stable:\n% x\n% x", enc, enc2)
		}
	})
}

// FuzzDecodeHistory is FuzzDecodeRecord for a history entry's value: it
// decodes, with the seq its etcd key gave it, or is ErrDamaged.
func FuzzDecodeHistory(f *testing.F) {
	var values [][]byte
	for _, e := range []HistoryEntry{entry(1, newKey()), {}, {Gen: math.MaxUint64, At: math.MinInt64, Outcome: "superseded", Rewritten: true, BaseGen: 4, CRC32C: math.MaxUint32}} {
		b, err := encodeHistory(e)
		if err != nil {
			f.Fatal(err)
		}
		values = append(values, b)
	}
	recordSeeds(f, values...)
	const seq = 41
	f.Fuzz(func(t *testing.T, b []byte) {
		var e HistoryEntry
		var err error
		if n := decodeAllocating(func() { e, err = decodeHistory(seq, b) }); n > allocBound(b) {
			t.Fatalf("decoding %d bytes allocated %d", len(b), n)
		}
		if err != nil {
			if !errors.Is(err, ErrDamaged) {
				t.Fatalf("refused as %v, not ErrDamaged", err)
			}
			return
		}
		if e.Seq != seq {
			t.Fatalf("decoded with seq %d, its key says %d", e.Seq, seq)
		}
		enc, err := encodeHistory(e)
		if err != nil {
			t.Fatalf("a decoded entry does not encode: %v", err)
		}
		e2, err := decodeHistory(seq, enc)
		if err != nil || e2 != e {
			t.Fatalf("encoded and decoded as %+v, %v; want %+v", e2, err, e)
		}
		if enc2, _ := encodeHistory(e2); !bytes.Equal(enc2, enc) {
			t.Fatalf("encoding is not stable:\n% x\n% x", enc, enc2)
		}
	})
}

// seqPattern is a history entry's name as seqName writes it; the last
// slot (all f) is none (parseSeq's doc).
var seqPattern = regexp.MustCompile(`^[0-9a-f]{16}$`)

// FuzzParseSeq checks the history entry's name, read from an etcd key
// that any client with access to the prefix can write, against the
// pattern seqName writes: accepted exactly when it has that form (and is
// not the last slot), and then it is seqName's name of its number.
func FuzzParseSeq(f *testing.F) {
	for _, s := range []string{seqName(0), seqName(41), seqName(math.MaxUint64 - 1), seqName(math.MaxUint64), "", "00000000000000A0", "+000000000000001", "0x00000000000001", "0000000000000001/", "00000000000000001"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		n, ok := parseSeq(name)
		want := seqPattern.MatchString(name) && name != "ffffffffffffffff"
		if ok != want {
			t.Fatalf("parseSeq(%q) = %v, the pattern says %v", name, ok, want)
		}
		if ok && seqName(n) != name {
			t.Fatalf("parseSeq(%q) = %d, whose name is %q", name, n, seqName(n))
		}
	})
}
