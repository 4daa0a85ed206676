package etcdmeta

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/status"

	"sessdb/internal/fsat"
)

// probeTimeout bounds the TLS probe of each endpoint; the probes run at
// once. A handshake takes milliseconds; the margin is for loaded hosts. A
// shorter request timeout bounds it too: the probe runs after a request
// ran out of time, and a member that takes the connection and never
// answers would otherwise hold a caller that asked for 300 ms for 2 s
// more.
const probeTimeout = 2 * time.Second

// opErr is the package's opErr, which also tells a TLS refusal from an
// unreachable etcd: gRPC keeps waiting for a usable connection until the
// deadline and then reports only the deadline, so when a TLS client's
// request ran out of time, a handshake of its own with each endpoint finds
// out whether the members answer but refuse, made only on this failure
// path.
//
// A plain client's request that ran out of time while its connections
// fail (TRANSIENT_FAILURE: each attempt refused or cut at once, never a
// member that takes the connection and stays silent, which the probe
// would wait out: a blackholed link must end within the timeout) is
// followed by the converse probe (tlsOnlyError): an http:// endpoint
// whose member serves TLS alone answers nothing a plain client can read,
// and was etcd unavailable at every request, a resolve store-unavailable
// for good, where it is a setting to fix.
//
// A request etcd refused as "permission denied" was made with credentials
// it took: the user's role does not reach the prefix (a prefix mistyped,
// or moved without its grant), which the error says, naming both.
func (s settings) opErr(ctx context.Context, op, key string, err error) error {
	werr := opErr(ctx, op, key, err)
	if errors.Is(werr, ErrAuth) && (errors.Is(err, rpctypes.ErrPermissionDenied) || status.Code(err) == codes.PermissionDenied) {
		who := "this client (its certificate's common name)"
		if s.Username != "" {
			who = fmt.Sprintf("the user %q", s.Username)
		}
		return fmt.Errorf("%w (%s may not read or write under the etcd prefix %q: is the prefix the fleet's, and does the user's role grant it?)", werr, who, s.Prefix)
	}
	if !errors.Is(werr, ErrUnavailable) {
		return werr
	}
	var herr error
	switch {
	case s.tls != nil:
		herr = s.handshakeError()
	case s.connState != nil && s.connState() == connectivity.TransientFailure:
		herr = s.tlsOnlyError()
	}
	if herr == nil {
		return proxyNoted(werr, s.Endpoints)
	}
	if key != "" {
		op += " " + key
	}
	// The request itself went unanswered, on a connection made before the
	// refusal: a write may have been served all the same.
	if note := s.certOutOfDate(time.Now()); note != "" {
		return unanswered{fmt.Errorf("%s: %w: %w (%s)", op, ErrAuth, herr, note)}
	}
	return unanswered{fmt.Errorf("%s: %w: %w", op, ErrAuth, herr)}
}

// proxyNoted is err, an unanswered request's, saying that HTTPS_PROXY is
// set but not used, when it is and an endpoint is not loopback (which
// gRPC would not send through a proxy either). The members are dialled
// directly (Open: grpc.WithNoProxy), so a member reached only through the
// proxy (a host only the proxy resolves or routes to) gets "etcd
// unavailable" after the whole timeout; without this, nothing would name
// the proxy. The value is not quoted: a proxy's URL may hold its
// credentials.
func proxyNoted(err error, endpoints []string) error {
	set := ""
	for _, v := range []string{"HTTPS_PROXY", "https_proxy"} {
		if os.Getenv(v) != "" {
			set = v
			break
		}
	}
	if set == "" || !slices.ContainsFunc(endpoints, notLoopback) {
		return err
	}
	return fmt.Errorf("%w (%s is set, but sessdb dials its etcd members directly, never through a proxy: a member reached only through one is unreachable; give an endpoint it reaches directly, such as etcd's gRPC proxy)", err, set)
}

// notLoopback reports whether endpoint's host is other than localhost or
// a loopback address.
func notLoopback(endpoint string) bool {
	u, err := url.Parse(endpoint)
	if err != nil {
		return true
	}
	h := u.Hostname()
	if ip, err := netip.ParseAddr(h); err == nil {
		return !ip.IsLoopback()
	}
	return h != "localhost"
}

// unanswered marks an error found after its request went unanswered (see
// Unanswered); its text is the error's.
type unanswered struct{ error }

func (u unanswered) Unwrap() error { return u.error }

// Unanswered reports whether err is of a request that got no answer, so
// that a write may have committed though it returned err: ErrUnavailable;
// the context.Canceled of a request whose caller cancelled it (it may
// have gone out before the cancel); and the ErrAuth of a TLS client whose
// request ran out of time and whose handshake of its own with the members
// then found its credentials refused (a client certificate that expired
// or was replaced meanwhile: the request had gone out on a connection
// made before). A writer that would remove what its write names keeps it
// for such an error, as for ErrUnavailable.
func Unanswered(err error) bool {
	var u unanswered
	return errors.Is(err, ErrUnavailable) || errors.As(err, &u)
}

// certOutOfDate says when the client certificate is not valid at now, or
// returns "". A member refuses such a certificate as it refuses any other
// (etcd 3.4, built with Go 1.19: "bad certificate"). The file is read
// again, as the client reads it for each handshake: it may have been
// replaced since Open.
func (s settings) certOutOfDate(now time.Time) string {
	if s.CertFile == "" {
		return ""
	}
	data, err := fsat.ReadConfigFile(s.CertFile, maxTLSFileBytes)
	if err != nil {
		return ""
	}
	// The first CERTIFICATE block, as the client takes it
	// (tls.X509KeyPair): the file may hold its key before it.
	var block *pem.Block
	for {
		block, data = pem.Decode(data)
		if block == nil {
			return ""
		}
		if block.Type == "CERTIFICATE" {
			break
		}
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	switch {
	case err != nil:
		return ""
	case now.After(cert.NotAfter):
		return fmt.Sprintf("the client certificate %s expired at %s", s.CertFile, cert.NotAfter.UTC().Format(time.RFC3339))
	case now.Before(cert.NotBefore):
		return fmt.Sprintf("the client certificate %s is not valid before %s", s.CertFile, cert.NotBefore.UTC().Format(time.RFC3339))
	}
	return ""
}

// handshakeError returns the first TLS failure among the endpoints, or nil
// if none failed at the TLS level (unreachable members are not a TLS
// failure).
func (s settings) handshakeError() error {
	base := s.tls
	if s.CertFile != "" {
		base = base.Clone()
		base.GetClientCertificate = s.clientCertificate
	}
	return s.probeEach(func(ep string, d time.Duration) error { return handshake(base, ep, d) })
}

// probeEach runs probe on every endpoint at once, each bounded by the
// probe's timeout (at most the request timeout), and returns the first
// error to come back, or nil.
func (s settings) probeEach(probe func(endpoint string, within time.Duration) error) error {
	errs := make(chan error, len(s.Endpoints))
	d := min(probeTimeout, s.RequestTimeout)
	for _, ep := range s.Endpoints {
		go func() { errs <- probe(ep, d) }()
	}
	var first error
	for range s.Endpoints {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

func handshake(base *tls.Config, endpoint string, within time.Duration) error {
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil
	}
	// One deadline for the dial, the handshake and the read.
	deadline := time.Now().Add(within)
	// A member that serves plain http takes a ClientHello and never
	// answers it: silence, as from a stopped member. It answers plain
	// HTTP on the same port, which is asked at the same time.
	plain := make(chan bool, 1)
	go func() { plain <- servesPlainHTTP(u.Host, deadline) }()
	if err := tlsHandshake(base, endpoint, u, deadline); err != nil {
		return err
	}
	if <-plain {
		return fmt.Errorf("TLS with %s: the member answers plain HTTP, without TLS: give its http:// URL, or serve TLS on it", endpoint)
	}
	return nil
}

// tlsOnlyError returns, for the first endpoint whose member answers a TLS
// handshake and not plain HTTP, that it serves TLS, or nil. A member that
// answers both (etcd serves http and https on one port when both are
// listened on) is no mistake of the URL's: its silence is etcd's. Bounded
// as handshakeError is.
func (s settings) tlsOnlyError() error { return s.probeEach(tlsOnly) }

func tlsOnly(endpoint string, within time.Duration) error {
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil
	}
	deadline := time.Now().Add(within)
	plain := make(chan bool, 1)
	go func() { plain <- servesPlainHTTP(u.Host, deadline) }()
	if !answersTLS(u, deadline) || <-plain {
		return nil
	}
	return fmt.Errorf("%s: the member serves TLS, not plain HTTP: give its https:// URL, with the CA that vouches for it", endpoint)
}

// answersTLS reports whether the member at u answers a TLS handshake as a
// TLS server does: it completes, or fails on the server's certificate or
// on an alert, each of which only a TLS server sends. Nothing is sent
// after it.
func answersTLS(u *url.URL, deadline time.Time) bool {
	_, raw, err := dialHandshake(&tls.Config{}, u, deadline)
	if raw == nil {
		return false
	}
	defer raw.Close()
	var cv *tls.CertificateVerificationError
	var alert tls.AlertError
	return err == nil || errors.As(err, &cv) || errors.As(err, &alert)
}

// servesPlainHTTP reports whether host answers etcd's /version over plain
// HTTP before deadline. A member serving TLS never answers that with 200.
func servesPlainHTTP(host string, deadline time.Time) bool {
	d := net.Dialer{Deadline: deadline}
	conn, err := d.Dial("tcp", host)
	if err != nil {
		return false
	}
	defer conn.Close()
	conn.SetDeadline(deadline)
	if _, err := fmt.Fprintf(conn, "GET /version HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", host); err != nil {
		return false
	}
	status, err := bufio.NewReaderSize(conn, 64).ReadSlice('\n')
	if err != nil {
		return false
	}
	return strings.HasPrefix(string(status), "HTTP/1.1 200 ") || strings.HasPrefix(string(status), "HTTP/1.0 200 ")
}

// tlsHandshake is handshake's TLS half: the first TLS failure of a
// handshake with endpoint, or nil.
func tlsHandshake(base *tls.Config, endpoint string, u *url.URL, deadline time.Time) error {
	conn, raw, err := dialHandshake(base, u, deadline)
	if raw == nil {
		return nil // unreachable, not refused
	}
	defer raw.Close()
	if err != nil {
		return tlsFailure(endpoint, err)
	}
	// Under TLS 1.3 the server judges the client's certificate after the
	// client's handshake is done; a refusal arrives as an alert on the
	// first read. A server that accepted sends HTTP/2 settings instead,
	// or nothing until the deadline.
	var b [1]byte
	if _, err := conn.Read(b[:]); err != nil {
		return tlsFailure(endpoint, err)
	}
	return nil
}

// dialHandshake dials u's host and runs a TLS handshake over it with a
// copy of cfg (ALPN h2, as etcd's client offers; the server name u's host
// where cfg names none), all by deadline. raw is nil where the dial failed
// (a member unreachable, which refuses nothing); else the caller closes
// it, and err is the handshake's.
func dialHandshake(cfg *tls.Config, u *url.URL, deadline time.Time) (conn *tls.Conn, raw net.Conn, err error) {
	d := net.Dialer{Deadline: deadline}
	if raw, err = d.Dial("tcp", u.Host); err != nil {
		return nil, nil, nil
	}
	cfg = cfg.Clone()
	cfg.NextProtos = []string{"h2"}
	if cfg.ServerName == "" {
		cfg.ServerName = u.Hostname()
	}
	conn = tls.Client(raw, cfg)
	conn.SetDeadline(deadline)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	return conn, raw, conn.HandshakeContext(ctx)
}

// clientCertificate is the probe's GetClientCertificate. It reads the
// files again, as the client does for each handshake, but as Open read
// them (fsat.ReadConfigFile: a regular file only, bounded, never
// blocking), where the client's os.ReadFile blocks on a FIFO for good,
// and the probe with it, past every timeout. A file it cannot take is
// told as the TLS failure, naming the file.
func (s settings) clientCertificate(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	cert, err := fsat.ReadConfigFile(s.CertFile, maxTLSFileBytes)
	if err != nil {
		return nil, &clientCertError{err}
	}
	key, err := fsat.ReadConfigFile(s.KeyFile, maxTLSFileBytes)
	if err != nil {
		return nil, &clientCertError{err}
	}
	pair, err := tls.X509KeyPair(cert, key)
	if err != nil {
		return nil, &clientCertError{fmt.Errorf("%s with %s: %w", s.CertFile, s.KeyFile, err)}
	}
	return &pair, nil
}

// clientCertError is a client certificate or key the probe could not read.
type clientCertError struct{ err error }

func (e *clientCertError) Error() string { return "the client certificate: " + e.err.Error() }
func (e *clientCertError) Unwrap() error { return e.err }

// tlsFailure keeps the errors that are a refusal at the TLS level.
func tlsFailure(endpoint string, err error) error {
	var alert tls.AlertError
	var cv *tls.CertificateVerificationError
	var rh tls.RecordHeaderError
	var ce *clientCertError
	switch {
	case errors.As(err, &cv), errors.As(err, &rh), errors.As(err, &ce):
	case errors.As(err, &alert):
	default:
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return nil
		}
		if msg := err.Error(); !containsAny(msg, "tls:", "x509:", "remote error") {
			return nil
		}
	}
	return fmt.Errorf("TLS with %s: %w", endpoint, err)
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
