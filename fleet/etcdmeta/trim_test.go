package etcdmeta

import (
	"fmt"
	"testing"

	"sessdb/internal/etcdtest"
)

// The write that takes a sweeping slot (every HistoryLimit-th) leaves the
// key's newest HistoryLimit entries in etcd and nothing older: the
// oldest beyond are deleted in the same transaction (Put's doc).
func TestASweepLeavesTheNewestRingAndNothingOlder(t *testing.T) {
	etcdtest.Beside(t)
	s := open(t, etcdtest.Start1(t))
	key := newKey()
	rev := mustPut(t, s, key, 0, 1)
	for i := 2; i <= 2*HistoryLimit; i++ {
		if _, err := s.AppendHistory(ctx(t), key, rev, HistoryEntry{Gen: 1, Outcome: "run-incomplete", Ticket: fmt.Sprint(i)}); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
	resp, err := s.cli.Get(ctx(t), s.historyDir(key), clientPrefix()...)
	if err != nil || resp.Count != HistoryLimit {
		t.Fatalf("etcd holds %d history keys (%v) after the write at slot %d, want %d", resp.Count, err, 2*HistoryLimit, HistoryLimit)
	}
}
