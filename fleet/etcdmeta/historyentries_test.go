package etcdmeta

import (
	"errors"
	"testing"

	"sessdb/internal/etcdtest"
)

// HasHistoryEntries reads a name HistoryNames gave, no key's included,
// and counts what lies under its history dir alone: a name with a "/" in
// it, which HistoryNames never gives, is refused before etcd is asked,
// as every read of a key that is none is, rather than answered for
// another history's entries below it.
func TestHasHistoryEntriesRefusesANameWithASlash(t *testing.T) {
	etcdtest.Beside(t)
	s := open(t, etcdtest.Start1(t))
	dir := s.cfg.Prefix + "/history/"
	if _, err := s.cli.Put(ctx(t), dir+"abc/x/0000000000000001", "x"); err != nil {
		t.Fatal(err)
	}
	if has, err := s.HasHistoryEntries(ctx(t), "abc"); err != nil || !has {
		t.Fatalf("HasHistoryEntries(abc) = %v, %v; want true", has, err)
	}
	if has, err := s.HasHistoryEntries(ctx(t), "abc/x"); !errors.Is(err, ErrInvalidKey) || has {
		t.Errorf("HasHistoryEntries(abc/x) = %v, %v; want ErrInvalidKey", has, err)
	}
}
