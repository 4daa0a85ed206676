package etcdmeta

import (
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"sessdb/internal/etcdtest"
)

// proxy forwards one port to a member; cut refuses connections and drops
// the ones made, as a member that stopped does, without the seconds a
// member takes to stop and start again.
type proxy struct {
	t      *testing.T
	addr   string // host:port clients dial
	target string
	mu     sync.Mutex
	l      net.Listener
	conns  []net.Conn
}

func newProxy(t *testing.T, target string) *proxy {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{t: t, target: u.Host}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.addr = l.Addr().String()
	p.serve(l)
	t.Cleanup(p.cut)
	return p
}

func (p *proxy) serve(l net.Listener) {
	p.mu.Lock()
	p.l = l
	p.mu.Unlock()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			m, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, m)
			p.mu.Unlock()
			go func() { io.Copy(m, c); m.Close() }()
			go func() { io.Copy(c, m); c.Close() }()
		}
	}()
}

// cut closes the listener and every connection.
func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.l != nil {
		p.l.Close()
		p.l = nil
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// restore listens on the same port again.
func (p *proxy) restore() {
	l, err := net.Listen("tcp", p.addr)
	if err != nil {
		p.t.Fatal(err)
	}
	p.serve(l)
}

// A Store that found etcd unreachable reconnects at its first request
// once etcd is back, not when gRPC's reconnect backoff next fires: that
// backoff grows to two minutes over a long outage, and every request of
// a long-running host (each resolve a cold start) failed meanwhile,
// though etcd answered again.
func TestFirstRequestAfterAnOutageReconnects(t *testing.T) {
	c := etcdtest.Start1(t)
	p := newProxy(t, c.Endpoint(0))
	s := open(t, c, func(cfg *Config) {
		cfg.Endpoints = []string{"http://" + p.addr}
		cfg.RequestTimeout = 300 * time.Millisecond
	})
	// The setup's requests only have to be answered: the put goes
	// straight to etcd with the default timeout, and the Store's first
	// read, which connects it, is tried again until answered. With the
	// 300 ms timeout a starved test binary (nice 19 beside four busy
	// loops) failed the put 10 runs of 10.
	key := newKey()
	rev := mustPut(t, open(t, c), key, 0, 1)
	for try := 0; ; try++ {
		st, err := s.GetRecord(ctx(t), key)
		if err == nil && st.Rev == rev {
			break
		} else if try == 10 {
			t.Fatalf("GetRecord before the outage = rev %d, %v; want rev %d", st.Rev, err, rev)
		}
	}
	p.cut()
	if _, err := s.GetRecord(ctx(t), key); err == nil {
		t.Fatal("GetRecord through a cut connection succeeded")
	}
	p.restore()
	if st, err := s.GetRecord(ctx(t), key); err != nil || st.Rev != rev {
		t.Fatalf("GetRecord once etcd answers again = rev %d, %v; want rev %d", st.Rev, err, rev)
	}
}
