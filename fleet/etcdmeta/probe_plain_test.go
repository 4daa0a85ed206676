package etcdmeta

import (
	"bufio"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"sessdb/internal/etcdtest"
)

// A member behind a TLS front that answers a plain HTTP request with an
// error, as a TLS-terminating proxy does ("HTTP/1.1 400 The plain HTTP
// request was sent to HTTPS port"), serves TLS: when it does not answer
// in time, that is etcd unavailable, not the "answers plain HTTP, without
// TLS" refusal the probe names for a member that serves /version over
// plain HTTP (a 200). Taken for that, a resolve of a cluster merely down
// behind such a proxy would tell the operator to fix a TLS setting. The
// probe of such a member is done as soon as its handshake is answered.
func TestATLSFrontThatRefusesPlainHTTPIsNoPlainMember(t *testing.T) {
	dir := t.TempDir()
	ca := etcdtest.NewCA(t, dir, "front CA")
	certFile, keyFile := ca.Issue(t, dir, "front", true)
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	srv := &tls.Config{Certificates: []tls.Certificate{pair}, NextProtos: []string{"h2"}}
	l := listenHolding(t, func(c net.Conn) {
		r := bufio.NewReader(c)
		first, err := r.Peek(1)
		if err != nil {
			return
		}
		if first[0] != 0x16 { // not a TLS handshake record: plain HTTP
			io.WriteString(c, "HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\nThe plain HTTP request was sent to HTTPS port\n")
			c.Close()
			return
		}
		// TLS, and over HTTP/2 the server's settings, as any HTTP/2
		// server sends them at once; then silence: the etcd behind the
		// front is down.
		tc := tls.Server(&peeked{r, c}, srv)
		if tc.Handshake() == nil && tc.ConnectionState().NegotiatedProtocol == "h2" {
			tc.Write([]byte{0, 0, 0, 4, 0, 0, 0, 0, 0}) // an empty SETTINGS frame
		}
	})
	// The probe's handshake hears the server's settings at once: the
	// caller waits the request timeout, and the probe's bound after it
	// only for a member that does not answer it.
	const timeout = time.Second
	began := time.Now()
	_, err = getWith(Config{Endpoints: []string{"https://" + l.Addr().String()}, CAFile: ca.File, RequestTimeout: timeout}, newKey())
	took := time.Since(began)
	if !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrAuth) || strings.Contains(err.Error(), "plain HTTP") {
		t.Fatalf("a silent member behind a TLS front that refuses plain HTTP: %v; want ErrUnavailable only", err)
	}
	if within := timeout + 600*time.Millisecond; took >= within {
		t.Errorf("ErrUnavailable after %v with a %v timeout, past %v: the probe waited out its bound on a member that answered its handshake", took, timeout, within)
	}
}

// peeked is a connection whose first bytes were peeked through r.
type peeked struct {
	r *bufio.Reader
	net.Conn
}

func (p *peeked) Read(b []byte) (int, error) { return p.r.Read(b) }

// An http:// endpoint naming a member that serves TLS alone gets no
// answer a plain client can read: every request was etcd unavailable
// after its timeout (a resolve store-unavailable for good, a promote
// promote-failed, the setting to fix unsaid), where the converse, an
// https:// endpoint of a plain member, is named. The probe after the
// timeout names this one too.
func TestAnHTTPEndpointOfATLSMemberIsNamed(t *testing.T) {
	c := etcdtest.StartSecure(t, 1)
	ep := strings.Replace(c.Endpoint(0), "https://", "http://", 1)
	_, err := getWith(Config{Endpoints: []string{ep}, RequestTimeout: time.Second}, newKey())
	if !errors.Is(err, ErrAuth) || !strings.Contains(err.Error(), ep+": the member serves TLS") || !Unanswered(err) {
		t.Fatalf("an http:// endpoint of a TLS member: %v; want ErrAuth naming the endpoint as serving TLS", err)
	}
}

// A member that answers a TLS handshake and plain HTTP's /version both
// (etcd listening on http and https at one port) is no mistake of an
// http:// URL: when the client's connections to it fail, that is etcd
// unavailable, not a TLS setting to fix.
func TestAMemberServingBothSchemesIsNotTakenForTLSOnly(t *testing.T) {
	dir := t.TempDir()
	ca := etcdtest.NewCA(t, dir, "both CA")
	certFile, keyFile := ca.Issue(t, dir, "both", true)
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	srv := &tls.Config{Certificates: []tls.Certificate{pair}, NextProtos: []string{"h2"}}
	l := listenHolding(t, func(c net.Conn) {
		r := bufio.NewReader(c)
		first, err := r.Peek(1)
		if err != nil {
			return
		}
		if first[0] == 0x16 { // TLS: the handshake, then silence
			tls.Server(&peeked{r, c}, srv).Handshake()
			return
		}
		if line, _ := r.ReadString('\n'); strings.HasPrefix(line, "GET /version ") {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}")
		}
		// The client's own HTTP/2 is cut at once: its connections fail,
		// which is when a plain client probes.
		c.Close()
	})
	_, err = getWith(Config{Endpoints: []string{"http://" + l.Addr().String()}, RequestTimeout: 500 * time.Millisecond}, newKey())
	if !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrAuth) {
		t.Fatalf("a silent member that serves both schemes: %v; want ErrUnavailable only", err)
	}
}
