package etcdmeta

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestConfigDefaults(t *testing.T) {
	s, err := Config{Endpoints: []string{"http://127.0.0.1:2379"}, Prefix: "/x/"}.validate()
	if err != nil {
		t.Fatal(err)
	}
	if s.Prefix != "/x" || s.RequestTimeout != DefaultRequestTimeout || s.DialTimeout != DefaultDialTimeout ||
		s.LockTTL != DefaultLockTTL || s.LockWait != DefaultLockWait || s.tls != nil {
		t.Fatalf("settings = %+v", s)
	}
	if c, err := (Config{Endpoints: []string{"http://a:1"}, Prefix: "/x/"}).Validate(); err != nil || c.Prefix != "/x" || c.RequestTimeout != DefaultRequestTimeout {
		t.Fatalf("Validate = %+v, %v; want the defaults filled in", c, err)
	}
	s, _ = Config{Endpoints: []string{"http://a:1"}}.validate()
	if s.Prefix != DefaultPrefix {
		t.Fatalf("prefix = %q, want %q", s.Prefix, DefaultPrefix)
	}
	s, _ = Config{Endpoints: []string{"http://a:1"}, LockTTL: 1500 * time.Millisecond}.validate()
	if s.lockTTLSeconds() != 2 {
		t.Fatalf("lock TTL 1.5s = %d s, want 2", s.lockTTLSeconds())
	}
}

func TestConfigErrorsNameTheField(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.pem")
	os.WriteFile(junk, []byte("not a certificate"), 0o600)
	fifo, huge := filepath.Join(dir, "fifo.pem"), filepath.Join(dir, "huge.pem")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(huge, bytes.Repeat([]byte("x"), maxTLSFileBytes+1), 0o600); err != nil {
		t.Fatal(err)
	}
	ep := []string{"https://127.0.0.1:2379"}
	for _, tc := range []struct {
		cfg   Config
		field string
	}{
		{Config{}, "Endpoints"},
		{Config{Endpoints: []string{"127.0.0.1:2379"}}, "Endpoints[0]"},
		{Config{Endpoints: []string{"http://a:1", "ftp://b:2"}}, "Endpoints[1]"},
		{Config{Endpoints: []string{"http://a:1", "https://b:2"}}, "Endpoints[1]"},
		{Config{Endpoints: []string{"http://a"}}, "Endpoints[0]"},
		{Config{Endpoints: []string{"http://:2379"}}, "Endpoints[0]"}, // no host: the client would dial this machine
		{Config{Endpoints: []string{"http://a:1#x"}}, "Endpoints[0]"},
		{Config{Endpoints: []string{"http://u:s3cr3t@a:1"}}, "Endpoints[0]"},
		// A password that does not parse as one: never quoted either.
		{Config{Endpoints: []string{"http://u:s3cr3t/x@a:1"}}, "Endpoints[0]"},
		{Config{Endpoints: []string{"http://a:1", "http://u:s3cr3t%zz@b:1"}}, "Endpoints[1]"},
		{Config{Endpoints: []string{"u:s3cr3t@a:1"}}, "Endpoints[0]"},
		// An '@' and then a '/' in the password parses, its tail as the
		// host; a list split at a ',' in it leaves its head in an
		// endpoint of its own, with no '@'.
		{Config{Endpoints: []string{"http://u:p@s3cr3t/x@a:1"}}, "Endpoints[0]"},
		{Config{Endpoints: []string{"http://u:p@s3cr3t#x@a:1"}}, "Endpoints[0]"},
		{Config{Endpoints: []string{"http://u:s3cr3t", "x@a:1"}}, "Endpoints[1]"},
		{Config{Endpoints: []string{"http://u:p@s3cr3t", "x@a:1"}}, "Endpoints[1]"},
		// A user name alone is a credential too (a bearer token in the
		// URL), as is a user name beside a password.
		{Config{Endpoints: []string{"http://s3cr3t@a:1"}}, "Endpoints[0]"},
		{Config{Endpoints: []string{"https://a:1", "https://s3cr3t:p@b:1"}}, "Endpoints[1]"},
		{Config{Endpoints: []string{"s3cr3t://x@a:1"}}, "Endpoints[0]"},
		{Config{Endpoints: []string{"http://a:99999"}}, "Endpoints[0]"},
		{Config{Endpoints: []string{"http://a:0"}}, "Endpoints[0]"},
		{Config{Endpoints: ep, Prefix: "/"}, "Prefix"},
		{Config{Endpoints: ep, Prefix: "/bad\xffutf8"}, "Prefix"},
		{Config{Endpoints: ep, Prefix: "/a\nb"}, "Prefix"},
		{Config{Endpoints: ep, CertFile: "c"}, "CertFile"},
		// Neither blocks nor is read without bound (found by an audit: a
		// FIFO hung the worker, /dev/zero grew it by gigabytes).
		{Config{Endpoints: ep, CAFile: fifo}, "CAFile"},
		{Config{Endpoints: ep, CAFile: "/dev/zero"}, "CAFile"},
		{Config{Endpoints: ep, CAFile: huge}, "CAFile"},
		{Config{Endpoints: ep, CertFile: fifo, KeyFile: junk}, "CertFile"},
		{Config{Endpoints: ep, CertFile: junk, KeyFile: fifo}, "KeyFile"},
		{Config{Endpoints: ep, Username: "u"}, "Username"},
		{Config{Endpoints: ep, Password: "p"}, "Username"},
		// gRPC refuses to marshal a login that is not UTF-8: every
		// request failed as an internal error naming neither.
		{Config{Endpoints: ep, Username: "u\xff", Password: "p"}, "Username"},
		{Config{Endpoints: ep, Username: "u", Password: "s3cr3t\xff"}, "Password"},
		{Config{Endpoints: []string{"http://a:1"}, CAFile: junk}, "Endpoints"},
		{Config{Endpoints: ep, CAFile: filepath.Join(dir, "missing")}, "CAFile"},
		{Config{Endpoints: ep, CAFile: junk}, "CAFile"},
		{Config{Endpoints: ep, CertFile: junk, KeyFile: filepath.Join(dir, "missing")}, "KeyFile"},
		{Config{Endpoints: ep, CertFile: junk, KeyFile: junk}, "CertFile"},
		{Config{Endpoints: ep, RequestTimeout: -1}, "RequestTimeout"},
		{Config{Endpoints: ep, RequestTimeout: MaxRequestTimeout + time.Nanosecond}, "RequestTimeout"},
		{Config{Endpoints: ep, DialTimeout: -1}, "DialTimeout"},
		{Config{Endpoints: ep, LockTTL: -1}, "LockTTL"},
		{Config{Endpoints: ep, LockWait: -1}, "LockWait"},
	} {
		_, err := Open(tc.cfg)
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "etcd config "+tc.field+":") {
			t.Errorf("%+v: err = %v, want ErrInvalidConfig naming %s", tc.cfg, err, tc.field)
		}
		if err != nil && strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("%+v: the URL's password is in the error: %v", tc.cfg, err)
		}
		// The field, for a caller to name its own setting by.
		var ce *ConfigError
		if _, verr := tc.cfg.Validate(); !errors.As(verr, &ce) || ce.Field != tc.field || verr.Error() != err.Error() {
			t.Errorf("%+v: Validate = %v, want a *ConfigError of field %s, as Open's", tc.cfg, verr, tc.field)
		}
	}
}

// RedactedEndpoint shows no user information at all: a user name alone
// (a bearer token) is as secret as a password.
func TestRedactedEndpointShowsNoUserInformation(t *testing.T) {
	for ep, want := range map[string]string{
		"http://s3cr3t@a:2379":     "http://xxxxx@a:2379",
		"https://s3cr3t:pw@a:2379": "https://xxxxx@a:2379",
		"http://u:s3cr3t/x@a:1":    "http://xxxxx@a:1",
		"http://u:p@s3cr3t/x@a:1":  "http://xxxxx@a:1",
		"u:s3cr3t@a:1":             "xxxxx@a:1",
		"s3cr3t://x@a:1":           "xxxxx@a:1",
		"u:s3cr3t://x@a:1":         "xxxxx@a:1",
		"http://a:1":               "http://a:1",
	} {
		if got := RedactedEndpoint(ep); got != want {
			t.Errorf("RedactedEndpoint(%q) = %q, want %q", ep, got, want)
		}
	}
}

// A component record, history or lock is refused only where a fleet's
// prefix could be the part before it: no prefix is empty, so "/lock" or
// "/record/sessdb" can lie among no fleet's keys and is taken. Each was refused, a deployment's working
// prefix made unusable by an upgrade for a nesting that cannot happen.
func TestAPrefixThatNestsInNoFleetIsTaken(t *testing.T) {
	ep := []string{"http://a:1"}
	for _, p := range []string{"/lock", "/record/sessdb", "history/x", "/history", "record"} {
		if _, err := (Config{Endpoints: ep, Prefix: p}).Validate(); err != nil {
			t.Errorf("prefix %q: %v, want it taken", p, err)
		}
	}
	for _, p := range []string{"/a/record", "a/lock/x", "/sessdb/history/", "/a/b/lock"} {
		if _, err := (Config{Endpoints: ep, Prefix: p}).Validate(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("prefix %q: %v, want an invalid Prefix", p, err)
		}
	}
}
