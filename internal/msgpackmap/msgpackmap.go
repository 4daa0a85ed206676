// Package msgpackmap decodes the records sessdb writes as msgpack maps,
// in meta.db (package db) and in etcd (package fleet/etcdmeta), by one
// rule: a record is exactly one map and nothing else.
package msgpackmap

import (
	"bytes"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// Decode decodes b, one msgpack map, into v, skipping fields v does not
// know (an older binary reads a newer writer's record). msgpack alone
// would also take nil (leaving v zero) or an array (fields by position),
// and would ignore bytes after the value; sessdb writes none of these, so
// each is an error, which its callers report as damage.
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
	if err := dec.Decode(v); err != nil {
		return err
	}
	if n := r.Len(); n != 0 {
		return fmt.Errorf("msgpack: %d trailing bytes", n)
	}
	return nil
}
