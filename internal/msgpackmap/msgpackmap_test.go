package msgpackmap

import (
	"strings"
	"testing"

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
		"empty":    {nil, "EOF"},
		"cut":      {enc(map[string]any{"a": 1, "b": "long enough"})[:6], "EOF"},
	} {
		var r record
		err := Decode(c.b, &r)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", name, err, c.want)
		}
	}
}
