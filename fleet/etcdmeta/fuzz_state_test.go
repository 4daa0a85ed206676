package etcdmeta

import (
	"errors"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
)

// maxStateError bounds parseState's error: "get KEY: ", the damage and
// what it names, a history entry's name quoted in at most 64 bytes.
const maxStateError = 512

// FuzzParseState gives parseState (every Get, every guarded write's
// failed compare, every renumber) any record and any history entries an
// etcd member can return under a key's prefix: another binary's, one
// written by hand with etcdctl. The state it returns holds the record's
// revision, the record when it decodes, and exactly the history entries
// whose names are slots (or the name above the last slot, 2^64-1) and
// whose values decode, oldest first; any other entry, or a record that
// does not decode, is an error that names the key in one short line,
// whatever the names hold, and the entry above the last slot is one too,
// ErrAboveLastSlot where it is the only damage; the same responses give
// the same answer. Its Bytes are every key's and value's read, its
// HistoryRead every history entry read, whether it decodes or not.
func FuzzParseState(f *testing.F) {
	pi, chain := "0.54.2", uint64(2)
	rec, _ := encodeRecord(Record{PiVersion: &pi, ResumeChain: &chain}, 3)
	h1, _ := encodeHistory(HistoryEntry{Reason: "resumed", Bytes: 5})
	h2, _ := encodeHistory(HistoryEntry{Reason: "expired"})
	f.Add(rec, true, int64(7), seqName(3), h2, seqName(2), h1)
	f.Add([]byte{0xc1}, true, int64(1), seqName(1), h1, "x", h2)
	f.Add([]byte(nil), false, int64(0), seqName(1<<64-1), h1, seqName(0), []byte{0x80})
	f.Add(rec, true, int64(7), seqName(3), h2, seqName(2)+strings.Repeat("\x00", 100), h1)
	f.Add(rec, true, int64(7), "x/"+seqName(9), h2, seqName(2), h1)
	key := strings.Repeat("ab", 16)
	f.Fuzz(func(t *testing.T, record []byte, hasRecord bool, rev int64, name1 string, v1 []byte, name2 string, v2 []byte) {
		dir := "/sessdb/history/" + key + "/"
		var recKVs []*mvccpb.KeyValue
		if hasRecord {
			recKVs = []*mvccpb.KeyValue{{Key: []byte("/sessdb/record/" + key), Value: record, ModRevision: rev}}
		}
		// The server's order: newest first.
		hist := []*mvccpb.KeyValue{{Key: []byte(dir + name1), Value: v1}, {Key: []byte(dir + name2), Value: v2}}
		rs := []*pb.ResponseOp{
			{Response: &pb.ResponseOp_ResponseRange{ResponseRange: &pb.RangeResponse{Kvs: recKVs}}},
			{Response: &pb.ResponseOp_ResponseRange{ResponseRange: &pb.RangeResponse{Kvs: hist}}},
		}
		st, err := parseState(key, dir, 42, rs)
		if again, err2 := parseState(key, dir, 42, rs); !reflect.DeepEqual(st, again) || (err == nil) != (err2 == nil) || err != nil && err.Error() != err2.Error() {
			t.Fatalf("parseState twice: %+v %v, then %+v %v", st, err, again, err2)
		}

		damaged, above := false, false
		var want State
		want.Read = 42
		// Every key and value read, whether it decodes or not.
		for _, kv := range append(slices.Clone(recKVs), hist...) {
			want.Bytes += int64(len(kv.Key) + len(kv.Value))
		}
		want.HistoryRead = len(hist)
		if hasRecord {
			want.Rev = Rev(rev)
			r, rerr := decodeRecord(record)
			damaged = rerr != nil
			want.Record = r
		}
		for i := len(hist) - 1; i >= 0; i-- {
			name := string(hist[i].Key[len(dir):])
			seq, ok := parseSeq(name)
			if !ok && name == "ffffffffffffffff" {
				seq, ok, above = math.MaxUint64, true, true
			}
			if !ok {
				damaged = true
				continue
			}
			e, herr := decodeHistory(seq, hist[i].Value)
			if herr != nil {
				damaged = true
				continue
			}
			want.History = append(want.History, e)
		}
		if errors.Is(err, ErrAboveLastSlot) != (above && !damaged) {
			t.Fatalf("parseState: %v; want ErrAboveLastSlot exactly when the entry above the last slot is the only damage (it is there: %v; other damage: %v)", err, above, damaged)
		}
		damaged = damaged || above
		if !reflect.DeepEqual(st, want) {
			t.Fatalf("parseState = %+v; want %+v", st, want)
		}
		if damaged != (err != nil) {
			t.Fatalf("damaged %v, error %v", damaged, err)
		}
		if err == nil {
			return
		}
		if !errors.Is(err, ErrDamaged) && !errors.Is(err, ErrNewerSchema) || !strings.HasPrefix(err.Error(), "get "+key+": ") {
			t.Fatalf("parseState: %v; want damage or a newer schema, naming the key", err)
		}
		if len(err.Error()) > maxStateError {
			t.Fatalf("parseState: a %d-byte error for names of %d and %d bytes: %.300q", len(err.Error()), len(name1), len(name2), err)
		}
	})
}
