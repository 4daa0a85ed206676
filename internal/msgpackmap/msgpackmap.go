// Package msgpackmap decodes the records sessdb writes as msgpack maps,
// in meta.db (package db) and in etcd (package fleet/etcdmeta), by one
// rule: a record is exactly one map and nothing else.
package msgpackmap

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// Decode decodes b, one msgpack map, into v, skipping fields v does not
// know (an older binary reads a newer writer's record). msgpack alone
// would also take nil (leaving v zero) or an array (fields by position),
// and would ignore bytes after the value; sessdb writes none of these, so
// each is an error, which its callers report as damage. So is a value
// that WellFormed refuses: a length no bytes back, or nesting deeper than
// MaxDepth.
func Decode(b []byte, v any) error {
	r := bytes.NewReader(b)
	// A pooled decoder: a dump decodes a dozen records a key, and a new
	// decoder each was a tenth of its CPU.
	dec := msgpack.GetDecoder()
	defer msgpack.PutDecoder(dec)
	dec.Reset(r)
	c, err := dec.PeekCode()
	if err != nil {
		return err
	}
	if !msgpcode.IsFixedMap(c) && c != msgpcode.Map16 && c != msgpcode.Map32 {
		return fmt.Errorf("msgpack: code %#x is not a map", c)
	}
	if err := WellFormed(b); err != nil {
		return err
	}
	if err := dec.Decode(v); err != nil {
		return err
	}
	if n := r.Len(); n != 0 {
		return fmt.Errorf("msgpack: %d trailing bytes", n)
	}
	return nil
}

// MaxDepth is how deeply Decode lets arrays and maps nest. sessdb's
// records nest two deep (a record's transcript or context); a newer
// writer's fields are given room, a value nested thousands deep none: the
// decoder recurses once a level, so a 1 MB value of nested arrays took
// 1.8 s and 128 MB of stack to skip as an unknown field.
const MaxDepth = 32

// WellFormed walks b, one msgpack value of any type, without decoding it
// (Decode's check, for a value that is not a map: meta.db's string
// sidecars), and refuses
// what the decoder would believe too far: a string, binary or extension
// longer than the bytes left, or an array or map of more elements than
// bytes left (each element takes one at least); the decoder allocates a
// declared length before it reads it, up to 1 MiB at once and more in
// chunks (a 12-byte value that declares 4 GiB allocated 10 MB). Nesting
// beyond MaxDepth, the code 0xc1 that msgpack never uses, and bytes after
// the value are refused too.
func WellFormed(b []byte) error {
	// Values still to read at each level, the outermost first: on the
	// stack, as is the table of codes, for WellFormed runs before every
	// record decode and allocates nothing.
	var stack [MaxDepth + 1]uint64
	left := append(stack[:0], 1)
	for len(left) > 0 {
		top := len(left) - 1
		if left[top] == 0 {
			left = left[:top]
			continue
		}
		left[top]--
		if len(b) == 0 {
			return io.ErrUnexpectedEOF
		}
		c := b[0]
		b = b[1:]
		var size, items uint64 // the bytes it carries; the values it holds
		switch {
		case c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3:
		case c <= 0x8f:
			items = 2 * uint64(c&0x0f)
		case c <= 0x9f:
			items = uint64(c & 0x0f)
		case c <= 0xbf:
			size = uint64(c & 0x1f)
		default:
			f := codes[c-0xc0]
			if !f.used {
				return fmt.Errorf("msgpack: code %#x is never used", c)
			}
			if uint64(len(b)) < f.lenBytes {
				return io.ErrUnexpectedEOF
			}
			var n uint64
			switch f.lenBytes {
			case 1:
				n = uint64(b[0])
			case 2:
				n = uint64(binary.BigEndian.Uint16(b))
			case 4:
				n = uint64(binary.BigEndian.Uint32(b))
			}
			b = b[f.lenBytes:]
			size, items = f.size+n*f.perLen, n*f.perItem
		}
		if size > uint64(len(b)) || items > uint64(len(b)) {
			return &lengthError{c, size, items, len(b)}
		}
		b = b[size:]
		if items > 0 {
			if len(left) > MaxDepth {
				return fmt.Errorf("msgpack: nested deeper than %d", MaxDepth)
			}
			left = append(left, items)
		}
	}
	if len(b) != 0 {
		return fmt.Errorf("msgpack: %d trailing bytes", len(b))
	}
	return nil
}

// lengthError is WellFormed's refusal of a value that declares more than
// the bytes left.
type lengthError struct {
	code        byte
	size, items uint64
	left        int
}

func (e *lengthError) Error() string {
	return fmt.Sprintf("msgpack: code %#x declares %d bytes or %d values, and %d bytes are left", e.code, e.size, e.items, e.left)
}

// format is the shape of a msgpack code above 0xbf: lenBytes bytes of a
// length n follow it, then size+n*perLen bytes, then n*perItem values.
// used is false for the codes WellFormed handles itself (nil, false,
// true, the negative fixints) and for 0xc1, which msgpack never uses.
type format struct {
	used                            bool
	lenBytes, size, perLen, perItem uint64
}

// codes is indexed by the code less 0xc0.
var codes = [0x40]format{
	0xc4 - 0xc0: {true, 1, 0, 1, 0}, 0xc5 - 0xc0: {true, 2, 0, 1, 0}, 0xc6 - 0xc0: {true, 4, 0, 1, 0}, // bin
	0xc7 - 0xc0: {true, 1, 1, 1, 0}, 0xc8 - 0xc0: {true, 2, 1, 1, 0}, 0xc9 - 0xc0: {true, 4, 1, 1, 0}, // ext: a type byte, then the data
	0xca - 0xc0: {true, 0, 4, 0, 0}, 0xcb - 0xc0: {true, 0, 8, 0, 0}, // float32, float64
	0xcc - 0xc0: {true, 0, 1, 0, 0}, 0xcd - 0xc0: {true, 0, 2, 0, 0}, 0xce - 0xc0: {true, 0, 4, 0, 0}, 0xcf - 0xc0: {true, 0, 8, 0, 0}, // uint
	0xd0 - 0xc0: {true, 0, 1, 0, 0}, 0xd1 - 0xc0: {true, 0, 2, 0, 0}, 0xd2 - 0xc0: {true, 0, 4, 0, 0}, 0xd3 - 0xc0: {true, 0, 8, 0, 0}, // int
	0xd4 - 0xc0: {true, 0, 2, 0, 0}, 0xd5 - 0xc0: {true, 0, 3, 0, 0}, 0xd6 - 0xc0: {true, 0, 5, 0, 0}, 0xd7 - 0xc0: {true, 0, 9, 0, 0}, 0xd8 - 0xc0: {true, 0, 17, 0, 0}, // fixext
	0xd9 - 0xc0: {true, 1, 0, 1, 0}, 0xda - 0xc0: {true, 2, 0, 1, 0}, 0xdb - 0xc0: {true, 4, 0, 1, 0}, // str
	0xdc - 0xc0: {true, 2, 0, 0, 1}, 0xdd - 0xc0: {true, 4, 0, 0, 1}, // array
	0xde - 0xc0: {true, 2, 0, 0, 2}, 0xdf - 0xc0: {true, 4, 0, 0, 2}, // map
}
