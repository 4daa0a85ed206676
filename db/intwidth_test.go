package db

import "testing"

// An integer record decodes whatever width it was written in (marshal's
// compact ints are not part of the format): a signed code holding zero or
// a positive number is no negative number, and every negative fixint,
// -32 included, is an integer.
func TestIntegersOfEveryWidthDecode(t *testing.T) {
	for _, c := range []struct {
		b    []byte
		want int64
	}{
		{[]byte{0xe0}, -32},                       // the lowest negative fixint
		{[]byte{0xff}, -1},                        // the highest
		{[]byte{0xd0, 0x00}, 0},                   // int8 0
		{[]byte{0xd1, 0x00, 0x05}, 5},             // int16 5
		{[]byte{0xd2, 0, 0, 0, 0}, 0},             // int32 0
		{[]byte{0xcc, 0x07}, 7},                   // uint8 7
		{[]byte{0xcf, 0, 0, 0, 0, 0, 0, 0, 9}, 9}, // uint64 9
	} {
		if n, err := decodeInt(c.b); err != nil || n != c.want {
			t.Errorf("decodeInt(% x) = %d, %v; want %d", c.b, n, err, c.want)
		}
		u, err := decodeUint(c.b)
		if c.want < 0 {
			if err == nil {
				t.Errorf("decodeUint(% x) = %d; want an error (negative)", c.b, u)
			}
		} else if err != nil || u != uint64(c.want) {
			t.Errorf("decodeUint(% x) = %d, %v; want %d", c.b, u, err, c.want)
		}
	}
}

// An integer cut short is refused, never read as 0.
func TestATruncatedIntegerIsRefused(t *testing.T) {
	for _, b := range [][]byte{{0xcd, 0x01}, {0xd1, 0x00}, {0xcf, 0, 0, 0}, {0xd3}} {
		if u, err := decodeUint(b); err == nil {
			t.Errorf("decodeUint(% x) = %d; want an error", b, u)
		}
		if n, err := decodeInt(b); err == nil {
			t.Errorf("decodeInt(% x) = %d; want an error", b, n)
		}
	}
}
