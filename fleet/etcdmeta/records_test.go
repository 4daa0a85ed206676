package etcdmeta

import (
	"errors"
	"reflect"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

func TestRecordRoundTrip(t *testing.T) {
	for _, r := range []Record{{}, record(newKey(), 7), {PiVersion: ptr(""), ResumeChain: ptr(uint64(0))}} {
		b, err := encodeRecord(r, 0)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeRecord(b)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, r) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", got, r)
		}
	}
}

// A present sidecar with a zero value must stay present: "" is "unknown
// pi version", absent is no sidecar at all.
func TestRecordKeepsZeroValuedSidecars(t *testing.T) {
	b, _ := encodeRecord(Record{PiVersion: ptr("")}, 0)
	got, err := decodeRecord(b)
	if err != nil || got.PiVersion == nil || *got.PiVersion != "" || got.Venue != nil {
		t.Fatalf("decode = %+v, %v; want PiVersion \"\" and no Venue", got, err)
	}
}

func TestRecordSkipsUnknownFields(t *testing.T) {
	b, err := msgpack.Marshal(map[string]any{"v": 1, "pv": "0.58.3", "zz": []int{1, 2}, "t": map[string]any{"g": 3, "f": "x", "new": true}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeRecord(b)
	if err != nil {
		t.Fatal(err)
	}
	if *got.PiVersion != "0.58.3" || got.Transcript.Gen != 3 || got.Transcript.File != "x" {
		t.Fatalf("decode = %+v", got)
	}
}

func TestRecordRefusesNewerSchema(t *testing.T) {
	b, _ := msgpack.Marshal(map[string]any{"v": SchemaVersion + 1, "pv": "1"})
	if _, err := decodeRecord(b); !errors.Is(err, ErrNewerSchema) {
		t.Fatalf("err = %v, want ErrNewerSchema", err)
	}
}

func TestRecordDamage(t *testing.T) {
	good, _ := encodeRecord(record(newKey(), 1), 0)
	noVersion, _ := msgpack.Marshal(map[string]any{"pv": "1"})
	wrongType, _ := msgpack.Marshal(map[string]any{"v": 1, "t": "not a map"})
	array, _ := msgpack.Marshal([]any{1, "x"})
	for name, b := range map[string][]byte{
		"empty":      {},
		"nil":        {0xc0},
		"array":      array,
		"trailing":   append(good[:len(good):len(good)], 0x01),
		"truncated":  good[:len(good)/2],
		"no version": noVersion,
		"wrong type": wrongType,
	} {
		if _, err := decodeRecord(b); !errors.Is(err, ErrDamaged) {
			t.Errorf("%s: err = %v, want ErrDamaged", name, err)
		}
	}
}

func TestSeqNamesSortNumerically(t *testing.T) {
	prev := ""
	for _, n := range []uint64{0, 1, 9, 10, 15, 16, 255, 256, 1 << 32, 1<<64 - 2} {
		name := seqName(n)
		if name <= prev {
			t.Fatalf("seqName(%d) = %q sorts before %q", n, name, prev)
		}
		if got, ok := parseSeq(name); !ok || got != n {
			t.Fatalf("parseSeq(%q) = %d, %v", name, got, ok)
		}
		prev = name
	}
	// The last slot is none: no slot is above it (TestHistoryEntryInTheLastSlotIsDamage).
	for _, bad := range []string{"", "00000000000000A0", "000000000000000g", "0000000000000001/", "ffffffffffffffff"} {
		if _, ok := parseSeq(bad); ok {
			t.Errorf("parseSeq(%q) accepted", bad)
		}
	}
}

func TestValidKey(t *testing.T) {
	if !ValidKey("0123456789abcdef0123456789abcdef") {
		t.Fatal("a valid key refused")
	}
	for _, k := range []string{"", "0123456789abcdef0123456789abcde", "0123456789ABCDEF0123456789abcdef",
		"0123456789abcdef0123456789abcde/", "../3456789abcdef0123456789abcdef", "0123456789abcdef0123456789abcdef0"} {
		if ValidKey(k) {
			t.Errorf("ValidKey(%q) = true", k)
		}
	}
}
