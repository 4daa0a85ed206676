package etcdmeta

import (
	"errors"
	"reflect"
	"testing"

	"sessdb/internal/etcdtest"
)

// GetMany gives each key what Get gives it (a key with no record too),
// all at one revision; an answer over a List page's bound is refused, as
// are more keys than GetManyMost, and no state is given.
func TestGetManyIsGetOfEachKeyAtOneRevision(t *testing.T) {
	s := open(t, etcdtest.Start1(t))
	keys := []string{newKey(), newKey(), newKey()}
	rev := mustPut(t, s, keys[0], 0, 1)
	mustPut(t, s, keys[0], rev, 2)
	mustPut(t, s, keys[2], 0, 1)
	sts, errs, err := s.GetMany(ctx(t), keys)
	if err != nil || len(sts) != len(keys) || len(errs) != len(keys) {
		t.Fatalf("GetMany: %d states, %d errors, %v", len(sts), len(errs), err)
	}
	for i, k := range keys {
		want, werr := s.Get(ctx(t), k)
		if errs[i] != nil || werr != nil {
			t.Fatalf("%s: %v, Get's %v", k, errs[i], werr)
		}
		if sts[i].Read != sts[0].Read {
			t.Errorf("%s read at %d, %s at %d; want one revision", k, sts[i].Read, keys[0], sts[0].Read)
		}
		got := sts[i]
		got.Read = want.Read
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: GetMany %+v; Get %+v", k, got, want)
		}
	}
	if sts[1].Rev != 0 || len(sts[0].History) != 2 {
		t.Errorf("no record: rev %d; the key of two: %d entries", sts[1].Rev, len(sts[0].History))
	}

	saved := listPageBytes
	listPageBytes = 1 << 10
	defer func() { listPageBytes = saved }()
	if sts, _, err := s.GetMany(ctx(t), keys); sts != nil || !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("an answer over a bound of 1 KiB: %d states, %v; want none, ErrInvalidArgument", len(sts), err)
	}
	listPageBytes = saved
	many := make([]string, GetManyMost+1)
	for i := range many {
		many[i] = newKey()
	}
	if _, _, err := s.GetMany(ctx(t), many); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("%d keys: %v; want ErrInvalidArgument", len(many), err)
	}
}
