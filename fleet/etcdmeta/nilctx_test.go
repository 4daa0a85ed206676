package etcdmeta

import (
	"context"
	"testing"

	"sessdb/internal/etcdtest"
)

// Every request takes a nil ctx as context.Background(), as the fleet's
// and the store's walks do: it runs, bounded by the request timeout, and
// nothing panics. Before, each panicked in the caller ("cannot create
// context from nil parent").
func TestRequestsTakeANilContext(t *testing.T) {
	etcdtest.Beside(t)
	s := open(t, etcdtest.Start1(t))
	key, other := newKey(), newKey()
	var none context.Context
	steps := []struct {
		name string
		run  func() error
	}{
		{"create", func() error { _, err := s.Create(none, other, record(other, 1), nil); return err }},
		{"put", func() error { _, err := s.Put(none, key, 0, record(key, 1), entry(1, randHex(16))); return err }},
		{"get", func() error { _, err := s.Get(none, key); return err }},
		{"get record", func() error { _, err := s.GetRecord(none, key); return err }},
		{"peek record", func() error { _, err := s.PeekRecord(none, key); return err }},
		{"append history", func() error {
			st, err := s.GetRecord(ctx(t), key)
			if err == nil {
				_, err = s.AppendHistory(none, key, st.Rev, entry(1, randHex(16)))
			}
			return err
		}},
		{"list", func() error { return s.List(none, func(Item) error { return nil }) }},
		{"lock", func() error {
			unlock, _, err := s.Lock(none, key)
			if err == nil {
				unlock()
			}
			return err
		}},
		{"delete", func() error {
			st, err := s.GetRecord(ctx(t), key)
			if err == nil {
				_, err = s.Delete(none, key, st.Rev)
			}
			return err
		}},
	}
	for _, step := range steps {
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("%s: panicked: %v", step.name, p)
				}
			}()
			if err := step.run(); err != nil {
				t.Errorf("%s: %v", step.name, err)
			}
		}()
	}
}
