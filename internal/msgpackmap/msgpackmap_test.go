package msgpackmap

import (
	"bytes"
	"errors"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

type record struct {
	A int    `msgpack:"a"`
	B string `msgpack:"b"`
}

func TestDecode(t *testing.T) {
	enc := func(v any) []byte {
		t.Helper()
		b, err := msgpack.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	newer := enc(map[string]any{"a": 7, "b": "x", "z": []int{1, 2}})
	var r record
	if err := Decode(newer, &r); err != nil || r != (record{A: 7, B: "x"}) {
		t.Fatalf("a map with a field this reader does not know: %+v, %v; want {7 x}, nil", r, err)
	}
	for name, c := range map[string]struct {
		b    []byte
		want string
	}{
		"nil":      {enc(nil), "not a map"},
		"array":    {enc([]any{7, "x"}), "not a map"},
		"string":   {enc("a"), "not a map"},
		"trailing": {append(enc(map[string]any{"a": 1}), 0xc0), "1 trailing bytes"},
		// Well formed, and not what the reader's field holds.
		"a field of another type": {enc(map[string]any{"a": "seven"}), "decoding int"},
		"empty":                   {nil, "EOF"},
		// A struct, whose fields encode in one order: a map's order is
		// Go's random one, and cut there at 6 its "b" first is a string
		// that declares more bytes than are left, which WellFormed names
		// as such (the "declares" cases of TestDecodeRefusesWhatNoBytesBack).
		"cut": {enc(record{A: 1, B: "long enough"})[:6], "EOF"},
	} {
		var r record
		err := Decode(c.b, &r)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", name, err, c.want)
		}
	}
}

// A length field no bytes back, and nesting a decoder recurses into, are
// refused before the decoder sees them: before, a 12-byte record that
// declared a 4 GiB unknown field made the decoder allocate 10 MB, and a
// 1 MB one of nested arrays took 1.8 s and 128 MB of stack.
func TestDecodeRefusesWhatNoBytesBack(t *testing.T) {
	head := []byte{0x82, 0xa1, 'a', 0x01, 0xa1, 'z'}
	for name, c := range map[string]struct {
		tail []byte
		want string
	}{
		"str32 of 4 GiB":    {[]byte{0xdb, 0xff, 0xff, 0xff, 0xff}, "bytes are left"},
		"bin32 of 4 GiB":    {[]byte{0xc6, 0xff, 0xff, 0xff, 0xff}, "bytes are left"},
		"ext32 of 4 GiB":    {[]byte{0xc9, 0xff, 0xff, 0xff, 0xff, 0x01}, "bytes are left"},
		"array32 of 4 G":    {[]byte{0xdd, 0xff, 0xff, 0xff, 0xff}, "bytes are left"},
		"map32 of 4 G":      {[]byte{0xdf, 0xff, 0xff, 0xff, 0xff}, "bytes are left"},
		"nested 100,000":    {append(bytes.Repeat([]byte{0x91}, 100000), 0xc0), "nested deeper than"},
		"never-used code":   {[]byte{0xc1}, "never used"},
		"cut length field":  {[]byte{0xdb, 0xff}, "EOF"},
		"nested MaxDepth+1": {append(bytes.Repeat([]byte{0x91}, MaxDepth), 0xc0), "nested deeper than"},
	} {
		var r record
		b := append(bytes.Clone(head), c.tail...)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		err := Decode(b, &r)
		runtime.ReadMemStats(&after)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", name, err, c.want)
		}
		if n := after.TotalAlloc - before.TotalAlloc; n > 64<<10 {
			t.Errorf("%s: decoding %d bytes allocated %d", name, len(b), n)
		}
	}
	// Nesting up to MaxDepth, under a field this reader does not know, is
	// a newer writer's and decodes.
	b := append(append(bytes.Clone(head), bytes.Repeat([]byte{0x91}, MaxDepth-1)...), 0xc0)
	var r record
	if err := Decode(b, &r); err != nil || r.A != 1 {
		t.Fatalf("nested %d deep: %+v, %v", MaxDepth, r, err)
	}
}

// WellFormed runs before every record decode (each resolve, promote and
// walk of a key reads one to a dozen), so it must cost little beside the
// decode: it allocates nothing, whatever the value's shape within
// MaxDepth. It allocated twice a record (its stack of counts, which grew
// by append and escaped, and the lookup of each code's shape).
func TestWellFormedAllocatesNothing(t *testing.T) {
	deep := any(map[string]any{"x": 1})
	for range MaxDepth - 1 {
		deep = []any{deep}
	}
	for name, v := range map[string]any{
		"record": map[string]any{"v": 2, "t": map[string]any{"g": 12, "s": 4096, "c": uint64(0xdeadbeef), "p": int64(1) << 60, "f": "0000000000001e240-0123456789abcdef.jsonl"},
			"pv": "0.61.2", "vn": "local", "rc": 3, "cx": map[string]any{"t": 150000, "w": 200000, "m": "anthropic/claude-sonnet-4-5"}, "hs": 99},
		"every code": map[string]any{"f": []any{1.5, float32(2), nil, true, false, []byte("bin"), int64(-1 << 40), uint64(1 << 63), time.Unix(5, 7)}},
		"deepest":    deep,
	} {
		b, err := msgpack.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := WellFormed(b); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if n := testing.AllocsPerRun(100, func() { WellFormed(b) }); n != 0 {
			t.Errorf("%s: WellFormed allocated %v times a call, want 0", name, n)
		}
	}
}

// FuzzWellFormed checks WellFormed against the msgpack library's own
// reading: it accepts exactly the values the library skips whole, bytes
// and all, but those nested deeper than MaxDepth.
func FuzzWellFormed(f *testing.F) {
	for _, v := range []any{
		map[string]any{"a": 1, "b": "x", "c": []any{1.5, float32(2), nil, true, false, []byte("bin"), int64(-1 << 40), uint64(1 << 63)}},
		map[string]any{"t": map[string]any{"g": 3, "f": "0123/00-xx.jsonl"}, "v": 1},
		[]any{map[string]any{}, []any{}, ""},
		time.Unix(1790000000, 5), // an extension
	} {
		b, err := msgpack.Marshal(v)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, b := range [][]byte{nil, {0xc1}, {0xd4, 1, 2}, {0xc7, 1, 5, 0}, {0xdb, 0xff, 0xff, 0xff, 0xff}, bytes.Repeat([]byte{0x91}, 40)} {
		f.Add(b)
	}
	f.Fuzz(checkWellFormed)
}

// TestWellFormedKnowsEveryCode checks FuzzWellFormed's property on every
// code byte followed by 0 to 20 bytes of each of a few fillers: zeros,
// ones, and lengths of 1 in each width (1, 2 and 4 bytes) before ones, so
// that every code's length field, fixed size and element count is met
// whole, cut short by a byte and followed by one: the seeds alone left
// most of the table of codes unchecked.
func TestWellFormedKnowsEveryCode(t *testing.T) {
	var fillers [][]byte
	for zeros := 0; zeros <= 4; zeros++ {
		fillers = append(fillers, append(make([]byte, zeros), bytes.Repeat([]byte{1}, 20)...))
	}
	fillers = append(fillers, make([]byte, 20))
	for c := 0; c < 256; c++ {
		for _, fill := range fillers {
			for n := 0; n <= 20; n++ {
				checkWellFormed(t, append([]byte{byte(c)}, fill[:n]...))
			}
		}
	}
}

// checkWellFormed is FuzzWellFormed's property for b.
func checkWellFormed(t *testing.T, b []byte) {
	err := WellFormed(b)
	r := bytes.NewReader(b)
	dec := msgpack.NewDecoder(r)
	lib := dec.Skip()
	whole := lib == nil && r.Len() == 0
	switch {
	case err == nil && !whole:
		t.Fatalf("WellFormed accepts % x; the library: %v, %d bytes left", b, lib, r.Len())
	case err != nil && whole && !strings.Contains(err.Error(), "nested deeper than") && !libraryWraps(err):
		t.Fatalf("WellFormed refuses % x (%v); the library skips it whole", b, err)
	}
}

// libraryWraps reports whether err refuses a length past math.MaxInt. The
// library reads a 4-byte length into an int, which on a 32-bit host makes
// one of 2^31 or more negative; it then skips nothing and takes the value
// for whole, where WellFormed, counting in uint64, refuses it as it does on
// a 64-bit host (found running the suite for linux/arm under qemu: "db ff
// ff ff ff", a string of 4 GiB with no bytes).
func libraryWraps(err error) bool {
	var long *lengthError
	return errors.As(err, &long) && max(long.size, long.items) > math.MaxInt
}
