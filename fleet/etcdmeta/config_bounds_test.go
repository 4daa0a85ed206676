package etcdmeta

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Each of Config's bounds holds at its edge: the last value inside is
// taken, the first outside is refused naming the field. A key file given
// without its certificate, or a certificate for http:// endpoints, is
// refused, not dropped: the client would dial without the certificate
// the operator meant to present.
func TestConfigBoundsHoldAtTheirEdge(t *testing.T) {
	key := filepath.Join(t.TempDir(), "client.key")
	if err := os.WriteFile(key, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	ep := []string{"https://127.0.0.1:2379"}
	for _, tc := range []struct {
		cfg   Config
		field string // "": taken
	}{
		{Config{Endpoints: ep, KeyFile: key}, "CertFile"},
		// A client certificate for http:// endpoints, which the client
		// would drop, dialling without it.
		{Config{Endpoints: []string{"http://a:1"}, CertFile: key, KeyFile: key}, "Endpoints"},
		{Config{Endpoints: []string{"http://a:65535"}}, ""},
		{Config{Endpoints: []string{"http://a:65536"}}, "Endpoints[0]"},
		{Config{Endpoints: []string{"http://a:1/"}}, ""},
		{Config{Endpoints: []string{"http://a:1/v3"}}, "Endpoints[0]"},
		{Config{Endpoints: []string{"http://a:1?x=1"}}, "Endpoints[0]"},
		{Config{Endpoints: []string{"http://a:1"}, Prefix: "/a\x1fb"}, "Prefix"},
		{Config{Endpoints: []string{"http://a:1"}, Prefix: "/a\x7fb"}, "Prefix"},
		{Config{Endpoints: []string{"http://a:1"}, Prefix: "/a b~"}, ""},
		// As long as a path; one byte more, and every job's ticket would
		// carry a runaway value. A trailing slash is trimmed first.
		{Config{Endpoints: []string{"http://a:1"}, Prefix: "/" + strings.Repeat("p", MaxPrefixBytes-1) + "/"}, ""},
		{Config{Endpoints: []string{"http://a:1"}, Prefix: "/" + strings.Repeat("p", MaxPrefixBytes)}, "Prefix"},
		{Config{Endpoints: []string{"http://a:1"}, RequestTimeout: MaxRequestTimeout}, ""},
		{Config{Endpoints: []string{"http://a:1"}, RequestTimeout: MaxRequestTimeout + time.Nanosecond}, "RequestTimeout"},
		// A count of seconds given bare is nanoseconds: a timeout no
		// member can meet, every resolve store-unavailable.
		{Config{Endpoints: []string{"http://a:1"}, RequestTimeout: 5}, "RequestTimeout"},
		{Config{Endpoints: []string{"http://a:1"}, RequestTimeout: MinRequestTimeout - time.Nanosecond}, "RequestTimeout"},
		{Config{Endpoints: []string{"http://a:1"}, RequestTimeout: MinRequestTimeout, DialTimeout: MinRequestTimeout}, ""},
		{Config{Endpoints: []string{"http://a:1"}, DialTimeout: 5}, "DialTimeout"},
	} {
		_, err := tc.cfg.Validate()
		var ce *ConfigError
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("%+v: %v, want it taken", tc.cfg, err)
		case tc.field != "" && (!errors.As(err, &ce) || ce.Field != tc.field || !errors.Is(err, ErrInvalidConfig)):
			t.Errorf("%+v: %v, want ErrInvalidConfig naming %s", tc.cfg, err, tc.field)
		}
		if err != nil && strings.Contains(err.Error(), "not a key") {
			t.Errorf("%+v: the key file's bytes are in the error: %v", tc.cfg, err)
		}
	}
}

// A lock's lease is LockTTL rounded up to whole seconds: a whole number
// of seconds is itself, any part of one more is one more, so a lock
// never outlives a dead holder by a second more than asked, nor by less.
func TestLockTTLRoundsUpToWholeSeconds(t *testing.T) {
	for ttl, want := range map[time.Duration]int64{
		time.Nanosecond:         1,
		time.Second:             1,
		time.Second + 1:         2,
		2 * time.Second:         2,
		1500 * time.Millisecond: 2,
		10 * time.Second:        10,
	} {
		s, err := Config{Endpoints: []string{"http://a:1"}, LockTTL: ttl}.validate()
		if err != nil {
			t.Fatal(err)
		}
		if got := s.lockTTLSeconds(); got != want {
			t.Errorf("LockTTL %v = a lease of %d s, want %d", ttl, got, want)
		}
	}
}
