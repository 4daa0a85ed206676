package etcdtest

import (
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Client returns a client of every member, closed in tb.Cleanup. On a
// cluster with Options.Auth it is logged in as root, with Options.TLS it
// presents the client certificate.
func (c *Cluster) Client(tb testing.TB) *clientv3.Client {
	tb.Helper()
	return c.client(tb, "root", RootPassword)
}

func (c *Cluster) client(tb testing.TB, user, password string) *clientv3.Client {
	tb.Helper()
	cfg, err := c.clientConfig(c.Endpoints(), user, password)
	if err != nil {
		tb.Fatalf("etcdtest: client TLS: %v", err)
	}
	cli, err := clientv3.New(cfg)
	if err != nil {
		tb.Fatalf("etcdtest: client: %v", err)
	}
	tb.Cleanup(func() { cli.Close() })
	return cli
}

// clientConfig is a client's of endpoints: logged in as user on a cluster
// with Options.Auth (none when user is ""), presenting the client
// certificate with Options.TLS.
func (c *Cluster) clientConfig(endpoints []string, user, password string) (clientv3.Config, error) {
	cfg := clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: 10 * time.Second,
		Logger:      zap.NewNop(),
	}
	if c.opts.Auth && user != "" {
		cfg.Username, cfg.Password = user, password
	}
	if c.opts.TLS {
		tlsCfg, err := transport.TLSInfo{CertFile: c.CertFile, KeyFile: c.KeyFile, TrustedCAFile: c.CAFile}.ClientConfig()
		if err != nil {
			return cfg, err
		}
		cfg.TLS = tlsCfg
	}
	return cfg, nil
}

// enableAuth adds root and User (a role of the same name with read-write
// permission on Options.Prefix) and turns authentication on.
func (c *Cluster) enableAuth() {
	tb := c.tb
	tb.Helper()
	saved := c.opts.Auth
	c.opts.Auth = false // no user exists yet
	cli := c.client(tb, "", "")
	c.opts.Auth = saved
	ctx := ctx(tb)
	steps := []func() error{
		func() error { _, err := cli.UserAdd(ctx, "root", RootPassword); return err },
		func() error { _, err := cli.UserGrantRole(ctx, "root", "root"); return err },
		func() error { _, err := cli.RoleAdd(ctx, User); return err },
		func() error {
			_, err := cli.RoleGrantPermission(ctx, User, c.opts.Prefix, clientv3.GetPrefixRangeEnd(c.opts.Prefix), clientv3.PermissionType(clientv3.PermReadWrite))
			return err
		},
		func() error { _, err := cli.UserAdd(ctx, User, Password); return err },
		func() error { _, err := cli.UserGrantRole(ctx, User, User); return err },
		func() error { _, err := cli.AuthEnable(ctx); return err },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			tb.Fatalf("etcdtest: enable auth: %v", err)
		}
	}
	cli.Close()
}
