package etcdmeta

import (
	"errors"
	"testing"

	"sessdb/internal/etcdtest"
)

// A write whose compare finds the key's newest history entry undecodable
// (the record itself still at its base) is ErrDamaged, named at once: not
// retried above the entries that do decode until it reads as the slot
// taken over and over (ErrUnavailable, which a caller would retry).
func TestAWriteThatFindsADamagedHistoryEntryIsDamaged(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	a, b := open(t, c), open(t, c)
	key := newKey()
	rev := mustPut(t, a, key, 0, 1) // a remembers slot 1
	if _, err := b.AppendHistory(ctx(t), key, rev, HistoryEntry{Gen: 1, Outcome: "run-incomplete", Ticket: "t"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.cli.Put(ctx(t), b.historyKey(key, 2), "\xc1 not msgpack"); err != nil {
		t.Fatal(err)
	}
	_, err := a.Put(ctx(t), key, rev, record(key, 2), entry(2, randHex(16)))
	if !errors.Is(err, ErrDamaged) || errors.Is(err, ErrUnavailable) {
		t.Fatalf("Put over a damaged newest entry = %v, want ErrDamaged", err)
	}
}
