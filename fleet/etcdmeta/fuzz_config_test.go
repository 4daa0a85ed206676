package etcdmeta

import (
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// FuzzConfigValidate gives Validate any endpoints, prefix, credentials
// and durations (the operator's variables and flags, and the Go API's
// caller, fill them). What it accepts is a fixed point: every endpoint
// http://host:port or https://host:port of one scheme and without user
// information, a prefix that is UTF-8 with no control character, no
// trailing slash and no component of the fleet's own keys after its first,
// and positive durations within their bounds. What it refuses is a
// *ConfigError naming a field, that quotes no password and no user
// information.
func FuzzConfigValidate(f *testing.F) {
	f.Add("http://a:2379,http://b:2379", "/sessdb/", "", "", int64(0), int64(0))
	f.Add("https://user:s3cr3tpass@a:2379", "/x", "u", "p4ssw0rdXYZ", int64(time.Second), int64(-1))
	f.Add("http://a:2379,https://b:2379", "", "u", "", int64(MaxRequestTimeout+1), int64(0))
	f.Add("http://:2379", "/sessdb/record/x", "", "", int64(0), int64(0))
	f.Add("http://a:0", "/a\x7f", "", "", int64(0), int64(0))
	f.Add("http://user:pa,ss@host:2379", "/", "", "", int64(0), int64(0))
	f.Add("http://admin:hunter22@a:2379,http://b:2379", "/", "", "", int64(0), int64(0))
	f.Add("http://a:2379/x?y#z", "record", "", "", int64(0), int64(0))
	f.Add("http://a:2379", "/x", "u\xff", "p", int64(0), int64(0))
	f.Add("http://a:2379", "/x", "u", "s3cr3t\xe9", int64(0), int64(0))
	f.Fuzz(func(t *testing.T, endpoints, prefix, user, password string, request, lockTTL int64) {
		c := Config{Prefix: prefix, Username: user, Password: password, RequestTimeout: time.Duration(request), LockTTL: time.Duration(lockTTL)}
		if endpoints != "" {
			c.Endpoints = strings.Split(endpoints, ",")
		}
		for _, ep := range c.Endpoints {
			if u, err := url.Parse(ep); err == nil && u.Scheme == "https" {
				return // https reads the system's CA bundle: a file, not this parse
			}
		}
		got, err := c.Validate()
		if again, err2 := c.Validate(); (err == nil) != (err2 == nil) || err != nil && err.Error() != err2.Error() {
			t.Fatalf("Validate twice: %v, then %v", err, err2)
		} else if err == nil && !equalConfig(got, again) {
			t.Fatalf("Validate twice: %+v, then %+v", got, again)
		}
		if err != nil {
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Field == "" || !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("Validate: %v is not a *ConfigError naming a field", err)
			}
			// A secret is quoted if the error changes when it is replaced
			// by another of its length (nothing is judged by its bytes).
			c2 := c
			c2.Password = filler(password)
			if _, err2 := c2.Validate(); err2 == nil || err2.Error() != err.Error() {
				t.Fatalf("Validate quotes the password: %v", err)
			}
			for i, ep := range c.Endpoints {
				at := strings.LastIndex(ep, "@")
				if at < 0 {
					continue
				}
				start := 0
				if j := strings.Index(ep[:at], "://"); j >= 0 {
					start = j + 3
				}
				c2 := c
				c2.Endpoints = append([]string(nil), c.Endpoints...)
				c2.Endpoints[i] = ep[:start] + filler(ep[start:at]) + ep[at:]
				if _, err2 := c2.Validate(); err2 == nil || err2.Error() != err.Error() {
					t.Fatalf("Validate quotes an endpoint's user information %q: %v", ep[start:at], err)
				}
			}
			return
		}
		if back, err := got.Validate(); err != nil || !equalConfig(back, got) {
			t.Fatalf("Validate(%+v) = %+v, which validates as %+v, %v", c, got, back, err)
		}
		scheme := ""
		for _, ep := range got.Endpoints {
			u, err := url.Parse(ep)
			if err != nil || u.User != nil || u.Hostname() == "" || !validPort(u.Port()) || u.Scheme != "http" || scheme != "" && u.Scheme != scheme {
				t.Fatalf("accepted endpoint %q", ep)
			}
			scheme = u.Scheme
		}
		if got.Prefix == "" || len(got.Prefix) > MaxPrefixBytes || strings.HasSuffix(got.Prefix, "/") || !utf8.ValidString(got.Prefix) ||
			strings.ContainsFunc(got.Prefix, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			t.Fatalf("accepted prefix %q (from %q)", got.Prefix, prefix)
		}
		parts := strings.Split(got.Prefix, "/")
		for i, p := range parts {
			if (p == "record" || p == "history" || p == "lock") && strings.Join(parts[:i], "/") != "" {
				t.Fatalf("accepted prefix %q nests among the keys of %q", got.Prefix, strings.Join(parts[:i], "/"))
			}
		}
		if !utf8.ValidString(got.Username) || !utf8.ValidString(got.Password) {
			t.Fatalf("accepted a login that is not UTF-8: user %q", got.Username)
		}
		if got.RequestTimeout <= 0 || got.RequestTimeout > MaxRequestTimeout || got.LockTTL <= 0 || got.DialTimeout <= 0 || got.LockWait <= 0 {
			t.Fatalf("accepted durations %+v", got)
		}
	})
}

func equalConfig(a, b Config) bool {
	return strings.Join(a.Endpoints, ",") == strings.Join(b.Endpoints, ",") && len(a.Endpoints) == len(b.Endpoints) &&
		a.Prefix == b.Prefix && a.CAFile == b.CAFile && a.CertFile == b.CertFile && a.KeyFile == b.KeyFile &&
		a.Username == b.Username && a.Password == b.Password && a.RequestTimeout == b.RequestTimeout &&
		a.DialTimeout == b.DialTimeout && a.LockTTL == b.LockTTL && a.LockWait == b.LockWait
}

// filler is s with every byte but '@', CR and LF replaced (by 'x', or 'y'
// where s has an 'x'; a byte of no UTF-8 character by 0xff, or 0xfe
// where s has 0xff): another secret of the same length and shape, UTF-8
// exactly where s is.
func filler(s string) string {
	b := []byte(s)
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		switch c := b[i]; {
		case r == utf8.RuneError && n == 1 && c == 0xff:
			b[i] = 0xfe
		case r == utf8.RuneError && n == 1:
			b[i] = 0xff
		case c == '@' || c == '\r' || c == '\n':
		default:
			for j := i; j < i+n; j++ {
				if b[j] == 'x' {
					b[j] = 'y'
				} else {
					b[j] = 'x'
				}
			}
		}
		i += n
	}
	return string(b)
}
