package etcdmeta

import (
	"context"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"sessdb/internal/etcdtest"
)

// proxy forwards one port to a member. In an outage (down) it takes each
// connection and closes it at once, as a load balancer in front of a
// member that stopped does: for gRPC a dial that failed, as one refused
// by a stopped member's port is (the transport is not made, and gRPC
// waits out its reconnect backoff), and unlike a refused one the proxy
// sees it, so a test counts gRPC's dials. holdNext has the next
// connection it takes held instead, answered by nothing until
// releaseHeld closes it: a dial in flight that then fails, as one to a
// member that took it in its listen queue and stopped does.
type proxy struct {
	t      *testing.T
	addr   string // host:port clients dial
	target string
	dials  chan bool // one for each connection taken while down: held?
	mu     sync.Mutex
	l      net.Listener
	down   bool
	hold   bool
	held   []net.Conn
	conns  []net.Conn
}

func newProxy(t *testing.T, target string) *proxy {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{t: t, target: u.Host, dials: make(chan bool, 1000)}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.addr = l.Addr().String()
	p.l = l
	go p.serve(l)
	t.Cleanup(p.close)
	return p
}

func (p *proxy) serve(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		down := p.down
		p.mu.Unlock()
		if down {
			go p.refuse(c)
			continue
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
}

// refuse closes c, a connection taken in the outage, or holds it
// (holdNext). Only gRPC's dials are counted and held, told by the first
// byte of HTTP/2's preface: the Store's probe of a failed request (a TLS
// handshake) is not one.
func (p *proxy) refuse(c net.Conn) {
	b := make([]byte, 1)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(c, b); err != nil || b[0] != 'P' {
		c.Close()
		return
	}
	p.mu.Lock()
	hold := p.hold
	if hold {
		p.held, p.hold = append(p.held, c), false
	}
	p.mu.Unlock()
	if !hold {
		c.Close()
	}
	p.dials <- hold
}

// cut starts the outage: the connections made are closed, and each one
// taken from now on.
func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// holdNext has the next connection taken in the outage held.
func (p *proxy) holdNext() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hold = true
}

// restore ends the outage: the connections taken from now on are
// forwarded; one held stays held.
func (p *proxy) restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = false
}

// releaseHeld closes the connections held.
func (p *proxy) releaseHeld() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.held {
		c.Close()
	}
	p.held = nil
}

// awaitDial waits for a connection taken in the outage, a minute at
// most, and reports whether it is held.
func (p *proxy) awaitDial() bool {
	p.t.Helper()
	select {
	case held := <-p.dials:
		return held
	case <-time.After(time.Minute):
		p.t.Fatal("no dial through the proxy for a minute")
		return false
	}
}

func (p *proxy) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.l.Close()
	for _, c := range append(p.conns, p.held...) {
		c.Close()
	}
	p.conns, p.held = nil, nil
}

// A Store that found etcd unreachable reconnects at its first request
// once etcd is back, not when gRPC's reconnect backoff next fires: that
// backoff grows to two minutes over a long outage, and every request of
// a long-running host (each resolve a cold start) failed meanwhile,
// though etcd answered again. The request may find gRPC waiting out its
// backoff (failed: its last dial failed before etcd was back), or
// dialling one last time into the outage (inFlight: a dial in flight,
// which fails 300 ms after the request was made). gRPC's reset of its
// backoff wakes a connection waiting it out and nothing else: made while
// a dial was in flight it was lost, and the request waited out the whole
// backoff that followed that dial, though etcd answered.
//
// The backoff is gRPC's default: 1 s after the first failed dial, and 1.6
// times the last after each one since, within 20 % either way. The
// request into the outage (300 ms) ends before gRPC's second dial, and
// three dials follow it: after the third, a Store that did not reset the
// backoff would wait 3.3 s at least (4.1 s within 20 %), and the request
// has 2 s. A defect
// shows as seconds, not as the milliseconds a starved test binary (nice
// 19 beside four busy loops) loses: with a 300 ms timeout and the next
// dial some 700 ms off, such a binary failed 5 runs of 5 one morning
// (0 of 5 another), though the Store reconnected at the request.
func TestFirstRequestAfterAnOutageReconnects(t *testing.T) {
	etcdtest.Beside(t)
	for _, inFlight := range []bool{false, true} {
		name := "failed"
		if inFlight {
			name = "inFlight"
		}
		t.Run(name, func(t *testing.T) {
			c := etcdtest.Start1(t)
			p := newProxy(t, c.Endpoint(0))
			const timeout = 2 * time.Second
			s := open(t, c, func(cfg *Config) {
				cfg.Endpoints = []string{"http://" + p.addr}
				cfg.RequestTimeout = timeout
			})
			// The setup's requests only have to be answered: the put goes
			// straight to etcd, and the Store's first read, which connects
			// it, is tried again until answered.
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
			short, cancel := context.WithTimeout(ctx(t), 300*time.Millisecond)
			_, err := s.GetRecord(short, key)
			cancel()
			if err == nil {
				t.Fatal("GetRecord through a cut connection succeeded")
			}
			// The dials made while the request waited are not counted.
			for len(p.dials) > 0 {
				<-p.dials
			}
			for range 2 {
				p.awaitDial()
			}
			if inFlight {
				p.holdNext()
			}
			p.awaitDial()
			if !inFlight {
				// gRPC sees the dial fail at once: it waits out its backoff.
				time.Sleep(100 * time.Millisecond)
			}
			p.restore()
			if inFlight {
				release := time.AfterFunc(300*time.Millisecond, p.releaseHeld)
				defer release.Stop()
			}
			start := time.Now()
			if st, err := s.GetRecord(ctx(t), key); err != nil || st.Rev != rev {
				t.Fatalf("GetRecord once etcd answers again = rev %d, %v after %v; want rev %d within the request timeout (%v), gRPC's next dial 3.3 s off at least", st.Rev, err, time.Since(start).Round(time.Millisecond), rev, timeout)
			}
		})
	}
}
