package etcdtest

import (
	"bytes"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Proxy is a TCP proxy on loopback in front of one address, which a test
// cuts, slows and heals while the processes on both sides stay alive: a
// network fault, where Stop and KillLeader are a process's.
//
// Cut (Blackhole, a Partition), it still accepts connections and dials
// its target, but forwards no byte either way: each direction holds the
// chunk it read last and reads no more, so a sender's writes fill the
// kernel's buffers and then block, and a request waits for an answer
// that does not come, as across a link whose packets are dropped. Heal
// forwards what was held, as TCP's retransmissions deliver it once the
// link is back; HealStale leaves the connections made before it silent
// until they are closed, as a stateful firewall or NAT that forgot them
// during the outage does, and forwards only new ones.
type Proxy struct {
	ln net.Listener
	to string
	// classify names the member a connection comes from by the head of
	// its first request (-1: unknown); nil for a client's proxy.
	classify func(head []byte) int

	mu         sync.Mutex
	blackhole  bool
	answers    bool         // BlackholeAnswers': only what comes back is held
	cutFrom    map[int]bool // a Partition's: sources cut off
	cutUnknown bool         // a Partition's: connections that name no member
	delay      time.Duration
	changed    chan struct{} // closed and replaced at every change
	links      map[*link]bool
	accepted   int64     // connections taken (see Accepted)
	acceptedAt time.Time // when the last was

	// read counts the bytes read from the openers ([1]: requests, held
	// or forwarded) and from the target ([0]: answers).
	read [2]atomic.Int64

	done chan struct{}
	wg   sync.WaitGroup
}

type link struct {
	in, out net.Conn
	src     int           // the member it comes from, -1 unknown
	known   chan struct{} // closed once src is set
	stale   bool          // HealStale left it silent
	once    sync.Once
	closed  chan struct{}
}

func (l *link) close() {
	l.once.Do(func() {
		close(l.closed)
		l.in.Close()
		l.out.Close()
	})
}

// NewProxy starts a proxy in front of target, an etcdtest URL
// ("http://127.0.0.1:port") or host:port, on a loopback port of its own;
// it is closed in tb.Cleanup, with every connection through it.
func NewProxy(tb testing.TB, target string) *Proxy {
	tb.Helper()
	p, err := newProxy("127.0.0.1:0", target, nil)
	if err != nil {
		tb.Fatalf("etcdtest: proxy to %s: %v", target, err)
	}
	tb.Cleanup(p.Close)
	return p
}

func newProxy(addr, target string, classify func([]byte) int) (*Proxy, error) {
	if u, err := url.Parse(target); err == nil && u.Host != "" {
		target = u.Host
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, to: target, classify: classify, changed: make(chan struct{}), links: map[*link]bool{}, done: make(chan struct{})}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// URL is the proxy's address as an endpoint: "http://127.0.0.1:port".
func (p *Proxy) URL() string { return "http://" + p.ln.Addr().String() }

// Requests is how many bytes the proxy has read from the connections'
// openers, forwarded or held: a test cutting the link learns from it
// that something was sent into the cut.
func (p *Proxy) Requests() int64 { return p.read[1].Load() }

// Answers is how many bytes the proxy has read from its target: a
// client's connection through it is set up once some came back.
func (p *Proxy) Answers() int64 { return p.read[0].Load() }

// Accepted is how many connections the proxy has taken from its
// clients, and when it took the last: a test learns from it when a
// client dialled again, where the connection that client closed cannot
// be seen (a cut link reads nothing more of it). The time is the
// proxy's own, not a poll's: a loaded machine does not delay it.
func (p *Proxy) Accepted() (n int64, last time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.accepted, p.acceptedAt
}

// Blackhole cuts the link: connections are still accepted, and no byte
// is forwarded either way until Heal or HealStale.
func (p *Proxy) Blackhole() { p.set(func() { p.blackhole = true }) }

// BlackholeAnswers cuts the link one way: what the connection's opener
// sends is forwarded, what comes back is held, until Heal or HealStale.
// A request is served and its answer never arrives: the write landed,
// and its writer cannot know.
func (p *Proxy) BlackholeAnswers() { p.set(func() { p.answers = true }) }

// Slow forwards each chunk read, either way, d after it was read, one
// chunk after another: a link with d of latency whose throughput falls
// with it. 0 ends it.
func (p *Proxy) Slow(d time.Duration) { p.set(func() { p.delay = d }) }

// Heal ends Blackhole and Slow; what was held is forwarded.
func (p *Proxy) Heal() {
	p.set(func() { p.blackhole, p.answers, p.delay = false, false, 0 })
}

// HealStale ends Blackhole and Slow for connections made from now on;
// those made before stay silent until an end closes them.
func (p *Proxy) HealStale() {
	p.set(func() {
		for l := range p.links {
			l.stale = true
		}
		p.blackhole, p.answers, p.delay = false, false, 0
	})
}

// partition cuts the connections from the sources in from, and those
// that name no member; nil from ends it.
func (p *Proxy) partition(from map[int]bool) {
	p.set(func() { p.cutFrom, p.cutUnknown = from, from != nil })
}

func (p *Proxy) set(change func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	change()
	close(p.changed)
	p.changed = make(chan struct{})
}

// Close stops the proxy and closes every connection through it. Calling
// it again does nothing.
func (p *Proxy) Close() {
	p.mu.Lock()
	select {
	case <-p.done:
		p.mu.Unlock()
		return
	default:
	}
	close(p.done)
	p.ln.Close()
	for l := range p.links {
		l.close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		at := time.Now()
		p.mu.Lock()
		p.accepted, p.acceptedAt = p.accepted+1, at
		p.mu.Unlock()
		out, err := net.DialTimeout("tcp", p.to, 5*time.Second)
		if err != nil {
			in.Close() // the target is down: as a refused connection
			continue
		}
		l := &link{in: in, out: out, src: -1, known: make(chan struct{}), closed: make(chan struct{})}
		p.mu.Lock()
		select {
		case <-p.done:
			p.mu.Unlock()
			l.close()
			return
		default:
		}
		p.links[l] = true
		p.wg.Add(2)
		p.mu.Unlock()
		go p.pump(l, out, in, true)
		go p.pump(l, in, out, false)
	}
}

// pump forwards src to dst until either end closes; tx is the direction
// from the connection's opener, whose first request names its source.
func (p *Proxy) pump(l *link, dst, src net.Conn, tx bool) {
	defer p.wg.Done()
	defer func() {
		l.close()
		p.mu.Lock()
		delete(p.links, l)
		p.mu.Unlock()
	}()
	buf := make([]byte, 32<<10)
	n := 0
	if tx {
		n = p.head(l, src, buf)
		p.count(tx, n)
	} else {
		select {
		case <-l.known:
		case <-l.closed:
			return
		}
	}
	for {
		if n > 0 {
			if !p.await(l, tx) {
				return
			}
			if _, err := dst.Write(buf[:n]); err != nil {
				return
			}
		}
		var err error
		n, err = src.Read(buf)
		p.count(tx, n)
		if err != nil && n == 0 {
			return
		}
	}
}

func (p *Proxy) count(tx bool, n int) {
	i := 0
	if tx {
		i = 1
	}
	p.read[i].Add(int64(n))
}

// head reads the opener's first bytes into buf and, for a peer's proxy,
// enough of them to name the member they come from (rafthttp's
// X-Server-From); it returns how many it read.
func (p *Proxy) head(l *link, src net.Conn, buf []byte) int {
	defer close(l.known)
	n := 0
	for n < len(buf) {
		m, err := src.Read(buf[n:])
		n += m
		if err != nil || p.classify == nil || bytes.Contains(buf[:n], []byte("\r\n\r\n")) {
			break
		}
	}
	if p.classify != nil {
		l.src = p.classify(buf[:n])
	}
	return n
}

// await waits while l is cut (tx: the direction from its opener), and
// then for the link's delay; false when the link or the proxy closed
// meanwhile.
func (p *Proxy) await(l *link, tx bool) bool {
	for {
		p.mu.Lock()
		cut := l.stale || p.blackhole || p.answers && !tx || (l.src >= 0 && p.cutFrom[l.src]) || (l.src < 0 && p.cutUnknown)
		d, changed := p.delay, p.changed
		p.mu.Unlock()
		if !cut && d == 0 {
			return true
		}
		var after <-chan time.Time
		if !cut {
			t := time.NewTimer(d)
			defer t.Stop()
			after = t.C
		}
		select {
		case <-after:
			return true
		case <-changed:
		case <-l.closed:
			return false
		case <-p.done:
			return false
		}
	}
}

// sender is the peer URL a rafthttp request's head names its sender by
// (X-PeerURLs, which Go's header canonicalisation spells X-Peerurls; the
// first of a comma-separated list), or "".
func sender(head []byte) string {
	const name = "\r\nX-Peerurls: "
	i := bytes.Index(head, []byte(name))
	if i < 0 {
		return ""
	}
	rest := head[i+len(name):]
	if j := bytes.IndexByte(rest, '\r'); j >= 0 {
		rest = rest[:j]
	}
	first, _, _ := bytes.Cut(rest, []byte(","))
	return string(first)
}

// Partition cuts the network between the members in side and the others
// (Options.ProxyPeers): every connection between the two sides, made
// before or after, forwards nothing, while each side's members still
// talk among themselves. A connection that names no member (rafthttp
// names its sender on its raft messages; a follower's lease renewal
// forwarded to the leader and a health probe do not) is cut too, on
// both sides: the proxy cannot tell which side it comes from, and a
// renewal let through from the cut-off side would keep its clients'
// leases alive. HealPartition ends it, forwarding what was held.
func (c *Cluster) Partition(side ...int) {
	c.tb.Helper()
	if len(c.peerProxies) != len(c.members) {
		c.tb.Fatalf("etcdtest: Partition needs Options.ProxyPeers")
	}
	in := map[int]bool{}
	for _, i := range side {
		in[i] = true
	}
	for j, p := range c.peerProxies {
		from := map[int]bool{}
		for i := range c.members {
			if in[i] != in[j] {
				from[i] = true
			}
		}
		p.partition(from)
	}
}

// HealPartition ends Partition.
func (c *Cluster) HealPartition() {
	for _, p := range c.peerProxies {
		p.partition(nil)
	}
}

// peerOf names the member a peer connection's first request comes from,
// by the peer URL it advertises.
func (c *Cluster) peerOf(head []byte) int {
	if from := sender(head); from != "" {
		for i, m := range c.members {
			if m.advertised.String() == from {
				return i
			}
		}
	}
	return -1
}

func (c *Cluster) closeProxies() {
	for _, p := range c.peerProxies {
		p.Close()
	}
	c.peerProxies = nil
}
