package etcdmeta

import (
	"errors"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"sessdb/internal/etcdtest"
)

// Get's Bytes is what etcd holds for the key as it reads it: the record's
// key and value and each history entry's it reads, an entry that does not
// decode included (stats on a fleet sums it). GetRecord reads no history
// and says 0.
func TestGetSaysTheBytesItRead(t *testing.T) {
	etcdtest.Beside(t)
	s := open(t, etcdtest.Start1(t))
	key := newKey()
	rev := mustPut(t, s, key, 0, 1)
	mustPut(t, s, key, rev, 2)
	held := func() int64 {
		var n int64
		for _, k := range []string{s.recordKey(key), s.historyDir(key)} {
			opts := []clientv3.OpOption{}
			if k == s.historyDir(key) {
				opts = append(opts, clientv3.WithPrefix())
			}
			resp, err := s.cli.Get(ctx(t), k, opts...)
			if err != nil {
				t.Fatal(err)
			}
			for _, kv := range resp.Kvs {
				n += int64(len(kv.Key) + len(kv.Value))
			}
		}
		return n
	}
	st, err := s.Get(ctx(t), key)
	if want := held(); err != nil || st.Bytes != want || want < 300 {
		t.Fatalf("Get = %d bytes, %v; etcd holds %d for the key", st.Bytes, err, want)
	}
	// An entry that does not decode is held too.
	if _, err := s.cli.Put(ctx(t), s.historyKey(key, 3), "\xc1 not msgpack"); err != nil {
		t.Fatal(err)
	}
	st, err = s.Get(ctx(t), key)
	if want := held(); !errors.Is(err, ErrDamaged) || st.Bytes != want || len(st.History) != 2 {
		t.Fatalf("Get with a damaged entry = %d bytes, %d entries, %v; want ErrDamaged, the 2 entries that decode and the %d bytes etcd holds", st.Bytes, len(st.History), err, want)
	}
	if only, err := s.GetRecord(ctx(t), key); err != nil || only.Bytes != 0 {
		t.Fatalf("GetRecord = %d bytes, %v; want 0: it reads no history", only.Bytes, err)
	}
}
