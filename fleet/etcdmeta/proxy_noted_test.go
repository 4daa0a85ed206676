package etcdmeta

import (
	"errors"
	"strings"
	"testing"
)

// proxyNoted adds its note where HTTPS_PROXY (or https_proxy) is set and
// any endpoint is not loopback: an IP address judged as one, a host name
// other than localhost taken as not, an endpoint that does not parse
// taken as not (gRPC would have sent it through the proxy). With the
// variable set and every endpoint loopback, or the variable unset, the
// error is as it was. Both set, it names HTTPS_PROXY, which Go's proxy
// rule takes first.
func TestProxyNotedNamesTheVariableWhereAnyEndpointIsNotLoopback(t *testing.T) {
	unavailable := errors.New("etcd unavailable")
	for _, c := range []struct {
		endpoints []string
		noted     bool
	}{
		{[]string{"http://127.0.0.1:2379"}, false},
		{[]string{"http://[::1]:2379"}, false},
		{[]string{"http://localhost:2379"}, false},
		{[]string{"http://127.0.0.1:2379", "https://localhost:2379"}, false},
		{[]string{"http://0.0.0.0:2379"}, true},
		{[]string{"http://etcd.example:2379"}, true},
		{[]string{"http://127.0.0.1:2379", "http://10.0.0.5:2379"}, true},
		{[]string{"http://localhost:2379", "http://etcd.example:2379"}, true},
		{[]string{"http://[::1"}, true},
	} {
		for _, v := range []string{"HTTPS_PROXY", "https_proxy"} {
			t.Setenv("HTTPS_PROXY", "")
			t.Setenv("https_proxy", "")
			t.Setenv(v, "http://proxy.example:3128")
			err := proxyNoted(unavailable, c.endpoints)
			if noted := strings.Contains(err.Error(), v+" is set"); noted != c.noted || !errors.Is(err, unavailable) {
				t.Errorf("%s set, endpoints %q: %v; want the note %v, the error kept", v, c.endpoints, err, c.noted)
			}
		}
		// Both set: Go's own rule (httpproxy) takes HTTPS_PROXY, and so
		// does the note.
		t.Setenv("HTTPS_PROXY", "http://proxy.example:3128")
		t.Setenv("https_proxy", "http://other.example:3128")
		if err := proxyNoted(unavailable, c.endpoints); c.noted && (!strings.Contains(err.Error(), "HTTPS_PROXY is set") || strings.Contains(err.Error(), "https_proxy")) {
			t.Errorf("both variables set, endpoints %q: %v; want HTTPS_PROXY named alone", c.endpoints, err)
		}
		t.Setenv("HTTPS_PROXY", "")
		t.Setenv("https_proxy", "")
		if err := proxyNoted(unavailable, c.endpoints); err != unavailable {
			t.Errorf("no proxy variable set, endpoints %q: %v; want the error as it was", c.endpoints, err)
		}
	}
}
