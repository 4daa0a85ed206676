package etcdmeta

import (
	"errors"
	"testing"
	"time"

	"sessdb/internal/etcdtest"
)

// An append etcd does not answer is ErrUnavailable, never a success: a
// refusal the caller takes for recorded when nothing was written is a
// job's outcome lost from the key's history. The append reads the key's
// state before it takes its guess, and that read's failure is the
// append's.
func TestAnAppendWhileEtcdIsDownIsUnavailable(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	// The record is put within open's 10 s, for a starved machine (at
	// 1 s its put failed so); only the append, with etcd down, has 1 s.
	s := open(t, c)
	key := newKey()
	rev := mustPut(t, s, key, 0, 1)
	s.cfg.RequestTimeout = time.Second
	c.Stop(0)
	got, err := s.AppendHistory(ctx(t), key, rev, HistoryEntry{Gen: 1, Outcome: "run-incomplete", Ticket: randHex(16)})
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("AppendHistory with etcd down = %d, %v; want ErrUnavailable", got, err)
	}
}
