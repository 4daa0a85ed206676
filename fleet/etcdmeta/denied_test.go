package etcdmeta

import (
	"errors"
	"strings"
	"testing"

	"sessdb/internal/etcdtest"
)

// A user whose role does not reach the prefix (a slip, "sessdb" for
// "/sessdb", or a prefix moved without its grant: docs/fleet.md) is
// refused by etcd as "permission denied", which is ErrAuth: the error
// names the prefix and the user, so that an operator does not go looking
// for a wrong password.
func TestPermissionDeniedNamesThePrefix(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start(t, etcdtest.Options{Auth: true})
	s := open(t, c, func(cfg *Config) {
		cfg.Username, cfg.Password = etcdtest.User, etcdtest.Password
		cfg.Prefix = "sessdb"
	})
	_, getErr := s.GetRecord(ctx(t), newKey())
	_, idErr := s.FleetID(ctx(t), false)
	listErr := s.List(ctx(t), func(Item) error { return nil })
	for op, err := range map[string]error{"GetRecord": getErr, "FleetID": idErr, "List": listErr} {
		if !errors.Is(err, ErrAuth) {
			t.Errorf("%s on a prefix the role does not grant = %v; want ErrAuth", op, err)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, `etcd prefix "sessdb"`) || !strings.Contains(msg, `"`+etcdtest.User+`"`) {
			t.Errorf("%s on a prefix the role does not grant: %q names neither the prefix nor the user", op, msg)
		}
	}
}
