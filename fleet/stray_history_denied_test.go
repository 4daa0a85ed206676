package fleet

import (
	"context"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"sessdb/internal/etcdtest"
)

// A check whose user may read the records but not the histories (a role
// granted all of the prefix but its histories): HistoryKeys is refused, and check
// fails with etcd's refusal, as a failed List does, rather than report a
// clean walk that never looked for a history without its record. So
// does dump.
func TestCheckAndDumpFailWhereTheHistoriesCannotBeListed(t *testing.T) {
	etcdtest.Beside(t)
	prefix := "/sessdb/" + randHex(4)
	c := etcdtest.Start(t, etcdtest.Options{Members: 1, Auth: true, Prefix: prefix + "/record/"})
	// Everything of the prefix but its histories: the fleet's id, and
	// what sorts after the histories (locks, records).
	for _, r := range [][2]string{{prefix + "/fleet", ""}, {prefix + "/i", prefix + "0"}} {
		if _, err := c.Client(t).RoleGrantPermission(t.Context(), etcdtest.User, r[0], r[1], clientv3.PermissionType(clientv3.PermReadWrite)); err != nil {
			t.Fatal(err)
		}
	}
	f := newFixture(t, c, func(cfg *Config) {
		cfg.Prefix = prefix
		cfg.Username, cfg.Password = etcdtest.User, etcdtest.Password
	})
	f.prefix = prefix
	f.marked()
	if _, err := f.b.Check(context.Background(), CheckOptions{}, nil); err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("check with the histories refused: %v; want etcd's refusal", err)
	}
	if err := f.b.Inspect(context.Background(), InspectOptions{}, nil); err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("dump with the histories refused: %v; want etcd's refusal", err)
	}
}
