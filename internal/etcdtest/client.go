package etcdtest

import (
	"errors"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
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
// permission on Options.Prefix) and turns authentication on. A step whose
// outcome etcd left unknown (unsure: the proposal timed out, or a leader
// change overtook it, as a starved cluster answers) is sent again, and
// the error that says the try before took effect is the step done: a
// user or role already added, authentication on (the client, with no
// user, is refused). A role granted again, or a permission, etcd takes
// as done.
func (c *Cluster) enableAuth() {
	tb := c.tb
	tb.Helper()
	saved := c.opts.Auth
	c.opts.Auth = false // no user exists yet
	cli := c.client(tb, "", "")
	c.opts.Auth = saved
	ctx := ctx(tb)
	steps := []struct {
		do   func() error
		done error // on a try sent again: the try before took effect
	}{
		{func() error { _, err := cli.UserAdd(ctx, "root", RootPassword); return err }, rpctypes.ErrUserAlreadyExist},
		{func() error { _, err := cli.UserGrantRole(ctx, "root", "root"); return err }, nil},
		{func() error { _, err := cli.RoleAdd(ctx, User); return err }, rpctypes.ErrRoleAlreadyExist},
		{func() error {
			_, err := cli.RoleGrantPermission(ctx, User, c.opts.Prefix, clientv3.GetPrefixRangeEnd(c.opts.Prefix), clientv3.PermissionType(clientv3.PermReadWrite))
			return err
		}, nil},
		{func() error { _, err := cli.UserAdd(ctx, User, Password); return err }, rpctypes.ErrUserAlreadyExist},
		{func() error { _, err := cli.UserGrantRole(ctx, User, User); return err }, nil},
		{func() error { _, err := cli.AuthEnable(ctx); return err }, rpctypes.ErrUserEmpty},
	}
	for _, step := range steps {
		err := step.do()
		for unsure(err) && ctx.Err() == nil {
			time.Sleep(50 * time.Millisecond) // a member with no leader answers at once
			if err = step.do(); step.done != nil && errors.Is(rpctypes.Error(err), step.done) {
				err = nil
			}
		}
		if err != nil {
			tb.Fatalf("etcdtest: enable auth: %v", err)
		}
	}
	cli.Close()
}

// unsure reports whether err left a request's outcome unknown: etcd
// timed its proposal out, or a leader change overtook it (the errors a
// starved or electing cluster gives; the client sends no write again).
func unsure(err error) bool {
	switch rpctypes.Error(err) {
	case rpctypes.ErrTimeout, rpctypes.ErrTimeoutDueToLeaderFail, rpctypes.ErrTimeoutDueToConnectionLost,
		rpctypes.ErrLeaderChanged, rpctypes.ErrNoLeader, rpctypes.ErrStopped:
		return true
	}
	return false
}
