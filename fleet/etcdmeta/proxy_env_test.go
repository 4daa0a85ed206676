package etcdmeta

import (
	"context"
	"net"
	"net/url"
	"os"
	"os/exec"
	"sync/atomic"
	"testing"
	"time"

	"sessdb/internal/etcdtest"
)

// proxyChildEnv names the endpoint the child of
// TestAStoreDialsItsMembersDirectlyWhateverTheProxyVariablesSay reads
// from: a process of its own, since Go reads the proxy variables once per
// process.
const proxyChildEnv = "SESSDB_ETCDMETA_PROXY_CHILD"

// A worker's environment often sets HTTPS_PROXY (for its package
// downloads), and gRPC, which etcd's client dials with, tunnelled every
// connection to a member through it (HTTP CONNECT) unless the member's
// host was loopback or in NO_PROXY: a proxy that refused made every
// request "etcd unavailable: context deadline exceeded" after the
// timeout, every resolve store-unavailable and every promote
// promote-failed, the proxy never named; one that passed it on carried a
// plain http:// member's login, the password in it. The Store dials its
// members directly, whatever the proxy variables say.
func TestAStoreDialsItsMembersDirectlyWhateverTheProxyVariablesSay(t *testing.T) {
	if ep := os.Getenv(proxyChildEnv); ep != "" {
		s, err := Open(Config{Endpoints: []string{ep}, RequestTimeout: 5 * time.Second})
		if err != nil {
			t.Fatalf("open %s: %v", ep, err)
		}
		defer s.Close()
		c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if _, err := s.GetRecord(c, newKey()); err != nil {
			t.Fatalf("a read through %s with HTTPS_PROXY=%s: %v", ep, os.Getenv("HTTPS_PROXY"), err)
		}
		return
	}
	c := etcdtest.Start1(t)
	proxy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	var tunnelled atomic.Int32
	go func() {
		for {
			conn, err := proxy.Accept()
			if err != nil {
				return
			}
			tunnelled.Add(1)
			conn.SetDeadline(time.Now().Add(5 * time.Second))
			conn.Read(make([]byte, 4096))
			conn.Write([]byte("HTTP/1.1 403 Forbidden\r\n\r\n"))
			conn.Close()
		}
	}()
	u, err := url.Parse(c.Endpoint(0))
	if err != nil {
		t.Fatal(err)
	}
	// 0.0.0.0 reaches this host's member, and is no loopback address,
	// which Go's proxy rules never send through a proxy.
	ep := "http://0.0.0.0:" + u.Port()
	cmd := exec.Command(os.Args[0], "-test.run=^TestAStoreDialsItsMembersDirectlyWhateverTheProxyVariablesSay$", "-test.count=1")
	via := "http://" + proxy.Addr().String()
	cmd.Env = append(os.Environ(), proxyChildEnv+"="+ep, "HTTPS_PROXY="+via, "https_proxy="+via, "HTTP_PROXY="+via, "http_proxy="+via, "NO_PROXY=", "no_proxy=")
	out, err := cmd.CombinedOutput()
	if err != nil || tunnelled.Load() != 0 {
		t.Errorf("with HTTPS_PROXY set: %d connections to the proxy, child %v\n%s", tunnelled.Load(), err, out)
	}
}
