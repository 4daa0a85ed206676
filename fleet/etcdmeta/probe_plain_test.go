package etcdmeta

import (
	"bufio"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
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
	etcdtest.Beside(t)
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
	// The verdict, through a Store: the probe after the request's
	// timeout, whatever it found in its bound, names no TLS setting.
	ep := "https://" + l.Addr().String()
	_, err = getWith(Config{Endpoints: []string{ep}, CAFile: ca.File, RequestTimeout: time.Second}, newKey())
	if !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrAuth) || strings.Contains(err.Error(), "plain HTTP") {
		t.Fatalf("a silent member behind a TLS front that refuses plain HTTP: %v; want ErrUnavailable only", err)
	}
	// The probe itself is done once the front answered its handshake and
	// its plain request, not at its bound. It is given a minute, so that
	// the bound on it, half that, is no guess at the machine's speed: a
	// probe that waits out its bound cannot meet it, and one done at the
	// answers always does. Timed through a Store, the probe's bound is the
	// request timeout's, 2 s at most, which a starved test binary (nice 19
	// beside four busy loops) took for the handshake alone (at 1 s, 2 runs
	// of 4 past the bound; at 2 s, 2 of 5).
	st, err := Config{Endpoints: []string{ep}, CAFile: ca.File}.validate()
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	herr := handshake(st.tls, ep, time.Minute)
	if took, within := time.Since(began), 30*time.Second; herr != nil || took >= within {
		t.Errorf("the probe of a TLS front that refuses plain HTTP = %v after %v with a minute's bound; want nil within %v: done once both were answered", herr, took, within)
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
// timeout names this one too. The probe is bounded by the request
// timeout: at 1 s a starved test binary (nice 19 beside four busy loops)
// got "etcd unavailable" 4 runs of 4, its handshake cut, the machine's
// speed and not the promise; the timeout is the probe's own most
// (probeTimeout), here and in the login's test below, and a request
// whose probe found nothing in that bound is asked again (probedGet:
// with 2 s, 1 starved run of 5 still did).
func TestAnHTTPEndpointOfATLSMemberIsNamed(t *testing.T) {
	c := etcdtest.StartSecure(t, 1)
	ep := strings.Replace(c.Endpoint(0), "https://", "http://", 1)
	err := probedGet(t, Config{Endpoints: []string{ep}, RequestTimeout: probeTimeout})
	if !errors.Is(err, ErrAuth) || !strings.Contains(err.Error(), ep+": the member serves TLS") || !Unanswered(err) {
		t.Fatalf("an http:// endpoint of a TLS member: %v; want ErrAuth naming the endpoint as serving TLS", err)
	}
}

// A member that answers a TLS handshake and plain HTTP's /version both
// (etcd listening on http and https at one port) is no mistake of an
// http:// URL: when the client's connections to it fail, that is etcd
// unavailable, not a TLS setting to fix.
func TestAMemberServingBothSchemesIsNotTakenForTLSOnly(t *testing.T) {
	etcdtest.Beside(t)
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

// The same slip with a user: Open logs in before any request, and the
// login went unanswered as every request did, "etcd unavailable: context
// deadline exceeded" at every command, the setting to fix unsaid. It is
// named as a request's is, at the login.
func TestALoginOverAnHTTPEndpointOfATLSMemberIsNamed(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.StartSecure(t, 1)
	ep := strings.Replace(c.Endpoint(0), "https://", "http://", 1)
	var err error
	for try := 1; ; try++ { // as probedGet, for the login's probe
		var s *Store
		s, err = Open(Config{Endpoints: []string{ep}, Username: etcdtest.User, Password: etcdtest.Password, DialTimeout: probeTimeout, RequestTimeout: probeTimeout})
		if err == nil {
			s.Close()
			t.Fatal("a login over an http:// endpoint of a TLS member succeeded")
		}
		if try == 5 || !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrAuth) {
			break
		}
		t.Logf("try %d: %v: the probe found nothing in its bound; asked again", try, err)
	}
	if !errors.Is(err, ErrAuth) || !strings.Contains(err.Error(), ep+": the member serves TLS") {
		t.Fatalf("a login over an http:// endpoint of a TLS member: %v; want ErrAuth naming the endpoint as serving TLS", err)
	}
}

// A login that a silent member leaves unanswered (it takes the
// connection and says nothing: stopped, or a stuck proxy) is etcd
// unavailable, and the member is not probed: the probe would wait on it
// as long again, where the login's connection never failed. (A probe's
// bytes reach the listener long before the probe, waiting its bound on
// the silent member, lets Open return; and sound code sends none, so a
// late read could hide the defect, never fail sound code.)
func TestALoginASilentMemberLeavesUnansweredIsNotProbed(t *testing.T) {
	etcdtest.Beside(t)
	var mu sync.Mutex
	var probed []string
	l := listenHolding(t, func(c net.Conn) {
		first := make([]byte, 4)
		if _, err := io.ReadFull(c, first); err != nil {
			return
		}
		// gRPC's own connection opens with HTTP/2's preface ("PRI "); the
		// probe's with a TLS handshake record or a GET.
		if first[0] == 0x16 || string(first) == "GET " {
			mu.Lock()
			probed = append(probed, string(first))
			mu.Unlock()
		}
	})
	ep := "http://" + l.Addr().String()
	s, err := Open(Config{Endpoints: []string{ep}, Username: "u", Password: "p", DialTimeout: 500 * time.Millisecond, RequestTimeout: time.Second})
	if err == nil {
		s.Close()
		t.Fatal("a login to a silent member succeeded")
	}
	if !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrAuth) {
		t.Fatalf("a login to a silent member: %v; want ErrUnavailable only", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(probed) > 0 {
		t.Fatalf("a silent member was probed after the login failed: %q", probed)
	}
}
