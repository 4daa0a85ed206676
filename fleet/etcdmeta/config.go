package etcdmeta

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	"google.golang.org/grpc/connectivity"

	"sessdb/internal/fsat"
)

// Defaults for the zero values of Config's fields.
const (
	DefaultPrefix         = "/sessdb"        // Config.Prefix
	DefaultRequestTimeout = 5 * time.Second  // Config.RequestTimeout
	DefaultDialTimeout    = 5 * time.Second  // Config.DialTimeout
	DefaultLockTTL        = 10 * time.Second // Config.LockTTL
	DefaultLockWait       = 10 * time.Second // Config.LockWait
)

// MaxPrefixBytes bounds Config.Prefix, as long as a path the system
// opens: a fleet's ID names its prefix, and every job's ticket its ID, so
// a runaway value (a variable's whole file) would make tickets no promote
// reads.
const MaxPrefixBytes = 4096

// maxTLSFileBytes bounds the read of a CA bundle, a certificate or a key:
// a path to a huge file or a device by mistake must not be read whole.
const maxTLSFileBytes = 1 << 20

// MaxRequestTimeout bounds Config.RequestTimeout. Besides sparing a job a
// wait far past any useful answer, it bounds how late a write may land
// after it was begun, which a reaper judging a file in flight must know
// whatever the writer's configuration (fleet's in-flight window).
const MaxRequestTimeout = 10 * time.Minute

// MinRequestTimeout bounds Config.RequestTimeout and DialTimeout from
// below: no member answers a request sooner, and a time.Duration counts
// nanoseconds, so a count of seconds given bare (RequestTimeout: 5) made
// every request fail at once, each resolve store-unavailable and each
// promote promote-failed, with nothing at Open to say why.
const MinRequestTimeout = time.Millisecond

// Config says how to reach etcd and where the records live. The zero value
// of every field but Endpoints is a safe default; no zero means "forever".
type Config struct {
	// Endpoints are the members' client URLs: "http://host:port" or
	// "https://host:port" (all of one scheme). One given twice counts
	// once.
	Endpoints []string
	// Prefix is where the records live; "" means DefaultPrefix. A trailing
	// slash is dropped. No component of it but the first may be
	// "record", "history" or "lock", the names of a fleet's own keys under
	// its prefix: another fleet's prefix may nest inside it ("/sessdb/a" in
	// "/sessdb"), never among its keys.
	Prefix string
	// CAFile is the PEM bundle that vouches for the members' certificates;
	// "" with https endpoints means the system roots.
	CAFile string
	// CertFile and KeyFile are a client certificate and its key, both or
	// neither. Where the cluster runs --client-cert-auth with
	// authentication on and no Username is set, etcd takes the
	// certificate's common name as the user.
	CertFile, KeyFile string
	// Username and Password log in to etcd's authentication, both or
	// neither, each valid UTF-8.
	Username, Password string
	// RequestTimeout bounds every read and write; 0 means
	// DefaultRequestTimeout. At least MinRequestTimeout, at most
	// MaxRequestTimeout.
	RequestTimeout time.Duration
	// DialTimeout bounds Open's login; 0 means DefaultDialTimeout. At
	// least MinRequestTimeout.
	DialTimeout time.Duration
	// LockTTL is the lease behind a lock: how long a lock outlives a holder
	// that died (rounded up to whole seconds; etcd raises a TTL below
	// its own minimum, 1.5 election timeouts). 0 means DefaultLockTTL.
	LockTTL time.Duration
	// LockWait bounds how long Lock waits for another holder; 0 means
	// DefaultLockWait.
	LockWait time.Duration
}

// settings is a validated Config with its defaults filled in.
type settings struct {
	Config
	tls *tls.Config
	// connState is the client connection's state, once Open made it: a
	// plain client's probe runs only while its connections fail.
	connState func() connectivity.State
}

func invalid(field, format string, args ...any) error {
	return &ConfigError{Field: field, Detail: fmt.Sprintf(format, args...)}
}

// Validate checks c as Open does, without connecting, and returns it with
// its defaults filled in (the prefix without its trailing slash, an
// endpoint given twice once). Its error is a *ConfigError.
func (c Config) Validate() (Config, error) {
	s, err := c.validate()
	return s.Config, err
}

func (c Config) validate() (settings, error) {
	s := settings{Config: c}
	if len(c.Endpoints) == 0 {
		return s, invalid("Endpoints", "none given")
	}
	// Credentials first, in every endpoint: a list split at a ',' in a
	// password leaves its head in an endpoint of its own, with no '@',
	// which the check of its shape below would quote, or with one of the
	// password's: the last endpoint with an '@' is the one named, whose
	// last '@' ends the user information. No endpoint of that shape
	// holds an '@'.
	for i := len(c.Endpoints) - 1; i >= 0; i-- {
		if ep := c.Endpoints[i]; strings.Contains(ep, "@") {
			return s, invalid(fmt.Sprintf("Endpoints[%d]", i), "%q carries credentials: give them as Username and Password, never in the URL", RedactedEndpoint(ep))
		}
	}
	// A member's endpoint given twice (again with a trailing slash, or
	// its host in capitals) is one endpoint: a hedged request's two tries
	// sent again go to two different endpoints (see Hedge), and one
	// member silent took both at one turn in three.
	var once []string
	seen := make(map[string]bool)
	scheme := ""
	for i, ep := range c.Endpoints {
		field := fmt.Sprintf("Endpoints[%d]", i)
		u, err := url.Parse(ep)
		// A host that is empty ("http://:2379", an unset variable) is not
		// refused by the client: it dials this machine's port instead.
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || !validPort(u.Port()) ||
			(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
			return s, invalid(field, "%q is not http://host:port or https://host:port (a port from 1 to 65535)", RedactedEndpoint(ep))
		}
		if scheme != "" && u.Scheme != scheme {
			return s, invalid(field, "%q mixes %s with %s endpoints", RedactedEndpoint(ep), u.Scheme, scheme)
		}
		scheme = u.Scheme
		if k := strings.ToLower(u.Host); !seen[k] {
			seen[k] = true
			once = append(once, ep)
		}
	}
	s.Endpoints = once
	s.Prefix = strings.TrimRight(c.Prefix, "/")
	if c.Prefix == "" {
		s.Prefix = DefaultPrefix
	}
	if len(s.Prefix) > MaxPrefixBytes {
		return s, invalid("Prefix", "%d bytes: longer than a prefix may be (%d)", len(s.Prefix), MaxPrefixBytes)
	}
	if s.Prefix == "" || !utf8.ValidString(s.Prefix) || strings.ContainsFunc(s.Prefix, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return s, invalid("Prefix", "%q: want a non-empty UTF-8 path without control characters", c.Prefix)
	}
	// A fleet's keys are its prefix's record/, history/ and lock/: a
	// prefix with such a component lies among the keys of the fleet whose
	// prefix is the part before it, whose reads would take the nested
	// fleet's keys for damage (a history entry, a lock no lease holds) and
	// whose deletes would remove them. The first component has no part
	// before it ("/lock", "record/x"), and no fleet an empty prefix.
	parts := strings.Split(s.Prefix, "/")
	for i, part := range parts {
		if (part == "record" || part == "history" || part == "lock") && strings.Join(parts[:i], "/") != "" {
			return s, invalid("Prefix", "%q: a component named %q would nest it among the keys of a fleet whose prefix is the part before it (records written under it stay there: see docs/fleet.md before changing it)", c.Prefix, part)
		}
	}
	if (c.CertFile == "") != (c.KeyFile == "") {
		return s, invalid("CertFile", "CertFile and KeyFile go together")
	}
	if (c.Username == "") != (c.Password == "") {
		return s, invalid("Username", "Username and Password go together")
	}
	// etcd's login sends both as protobuf strings, which gRPC refuses to
	// marshal unless they are UTF-8: such a login fails at every request,
	// as an internal error that names neither.
	if !utf8.ValidString(c.Username) {
		return s, invalid("Username", "%q is not valid UTF-8 (etcd takes a user's name as text)", c.Username)
	}
	if !utf8.ValidString(c.Password) {
		return s, invalid("Password", "the password is not valid UTF-8 (etcd takes a password as text)")
	}
	tlsWanted := c.CAFile != "" || c.CertFile != ""
	if tlsWanted && scheme == "http" {
		// The client would drop the TLS settings for an http endpoint and
		// send everything, the password too, in the clear.
		return s, invalid("Endpoints", "TLS files are set but the endpoints are http://; use https://")
	}
	if tlsWanted || scheme == "https" {
		// Each file is checked on its own first, so that the error names
		// the field at fault.
		if c.CAFile != "" {
			pem, err := fsat.ReadConfigFile(c.CAFile, maxTLSFileBytes)
			if err != nil {
				return s, invalid("CAFile", "%v", err)
			}
			if !x509.NewCertPool().AppendCertsFromPEM(pem) {
				return s, invalid("CAFile", "%s holds no PEM certificate", c.CAFile)
			}
		}
		if c.CertFile != "" {
			cert, err := fsat.ReadConfigFile(c.CertFile, maxTLSFileBytes)
			if err != nil {
				return s, invalid("CertFile", "%v", err)
			}
			key, err := fsat.ReadConfigFile(c.KeyFile, maxTLSFileBytes)
			if err != nil {
				return s, invalid("KeyFile", "%v", err)
			}
			if _, err := tls.X509KeyPair(cert, key); err != nil {
				return s, invalid("CertFile", "%s with %s: %v", c.CertFile, c.KeyFile, err)
			}
		}
		info := transport.TLSInfo{CertFile: c.CertFile, KeyFile: c.KeyFile, TrustedCAFile: c.CAFile}
		cfg, err := info.ClientConfig()
		if err != nil {
			return s, invalid("CAFile", "%v", err)
		}
		s.tls = cfg
	}
	for _, d := range []struct {
		field string
		v     *time.Duration
		def   time.Duration
	}{
		{"RequestTimeout", &s.RequestTimeout, DefaultRequestTimeout},
		{"DialTimeout", &s.DialTimeout, DefaultDialTimeout},
		{"LockTTL", &s.LockTTL, DefaultLockTTL},
		{"LockWait", &s.LockWait, DefaultLockWait},
	} {
		switch {
		case *d.v < 0:
			return s, invalid(d.field, "%v is negative", *d.v)
		case *d.v == 0:
			*d.v = d.def
		}
	}
	if s.RequestTimeout > MaxRequestTimeout {
		return s, invalid("RequestTimeout", "%v is more than %v", s.RequestTimeout, MaxRequestTimeout)
	}
	for _, d := range []struct {
		field string
		v     time.Duration
	}{{"RequestTimeout", s.RequestTimeout}, {"DialTimeout", s.DialTimeout}} {
		if d.v < MinRequestTimeout {
			return s, invalid(d.field, "%v is less than %v (a time.Duration counts nanoseconds: 5 seconds is 5 * time.Second)", d.v, MinRequestTimeout)
		}
	}
	return s, nil
}

// RedactedEndpoint is ep as an error may quote it: without anything
// before its last '@' but an http or https scheme. No user information is
// shown, not even a user name alone: a token given as one
// (http://TOKEN@host:port) is as secret as a password, which
// url.URL.Redacted alone masks. Nor is a URL parsed for it: a password
// that holds a '/', a '%' or a '#' unescaped, as a base64 one may, makes
// the URL unparsable with the password still in it; one that holds an '@'
// and after it a '/', '?' or '#' parses, the rest of the password as the
// host and path; without "//" it parses as an opaque path
// ("user:password@host:port"), and what comes before a "://" need not be
// a scheme ("user:password://x@host").
func RedactedEndpoint(ep string) string {
	at := strings.LastIndex(ep, "@")
	if at < 0 {
		return ep
	}
	scheme, _, found := strings.Cut(ep[:at], "://")
	if !found || !(strings.EqualFold(scheme, "http") || strings.EqualFold(scheme, "https")) {
		return "xxxxx" + ep[at:]
	}
	return scheme + "://xxxxx" + ep[at:]
}

// lockTTLSeconds is LockTTL in whole seconds, as etcd leases count.
func (s settings) lockTTLSeconds() int64 {
	return int64((s.LockTTL + time.Second - 1) / time.Second)
}

// validPort reports whether p is a TCP port number, 1 to 65535.
func validPort(p string) bool {
	n, err := strconv.Atoi(p)
	return err == nil && n >= 1 && n <= 65535 && p[0] != '+'
}
