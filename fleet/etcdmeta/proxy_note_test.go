package etcdmeta

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The members are dialled directly (grpc.WithNoProxy), so a deployment
// whose etcd was reached only through HTTPS_PROXY (a host only the proxy
// resolves or routes to), which worked before, got "etcd unavailable:
// context deadline exceeded" at every request, nothing naming the proxy.
// An unanswered request's error says the variable is set and not used,
// without its value (a proxy's URL may hold credentials); not when it is
// unset, nor for a loopback member, which gRPC never sent through one.
func TestAnUnansweredRequestSaysTheProxyVariableIsNotUsed(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close() // nothing listens there: every dial is refused
	read := func(t *testing.T, host string) error {
		t.Helper()
		ep := "http://" + net.JoinHostPort(host, strconv.Itoa(port))
		s, err := Open(Config{Endpoints: []string{ep}, RequestTimeout: 300 * time.Millisecond})
		if err != nil {
			t.Fatalf("open %s: %v", ep, err)
		}
		defer s.Close()
		_, err = s.GetRecord(context.Background(), newKey())
		if !errors.Is(err, ErrUnavailable) {
			t.Fatalf("a read from %s, where nothing listens: %v; want ErrUnavailable", ep, err)
		}
		return err
	}
	const secret = "proxy-password"
	for _, v := range []string{"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"} {
		t.Setenv(v, "")
	}
	if err := read(t, "0.0.0.0"); strings.Contains(err.Error(), "PROXY") || strings.Contains(err.Error(), "proxy") {
		t.Errorf("no proxy variable set: %v; want no word of a proxy", err)
	}
	for _, v := range []string{"HTTPS_PROXY", "https_proxy"} {
		t.Run(v, func(t *testing.T) {
			t.Setenv(v, "http://ops:"+secret+"@proxy.example:3128")
			// 0.0.0.0 is no loopback address to Go's proxy rules.
			err := read(t, "0.0.0.0")
			if msg := err.Error(); !strings.Contains(msg, v+" is set") || !strings.Contains(msg, "directly") || strings.Contains(msg, secret) {
				t.Errorf("%s set: %v; want it named as not used, its value not quoted", v, err)
			}
			if err := read(t, "127.0.0.1"); strings.Contains(err.Error(), v) {
				t.Errorf("%s set, a loopback member: %v; want no word of the proxy (gRPC never used it for loopback)", v, err)
			}
		})
	}
}
