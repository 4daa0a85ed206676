// Package etcdtest starts real etcd members in process (etcd's embed
// package) on loopback, for tests and benchmarks: one member, three, or a
// cluster with client and peer TLS and etcd's user/role authentication. A
// test can kill the leader, stop and restart a member, and restart the
// whole cluster from its data dirs.
//
// With Options.Binary the members are processes of a released etcd
// binary instead (ExternalBinary: the one SESSDB_ETCD_BINARY names), for
// the tests that must see what operators run; with SESSDB_ETCD_EVERYWHERE
// set, every cluster but those that need their members in process
// (Options.InProcess) is, so that a package's whole suite runs on it.
//
// Every member listens on 127.0.0.1 on ports the kernel handed out a moment
// before, keeps its data dir under tb.TempDir(), and writes its log (warnings
// and errors only) to a buffer that is printed only when the test failed. A
// cluster is closed in tb.Cleanup. Import this package from _test files only:
// it links the etcd server.
//
// # Ports
//
// A member keeps its ports across Stop and Restart, so a cluster reserves
// them for its whole life against every other process that uses this
// package, and draws them from below the kernel's ephemeral range, which
// no bind to port 0 and no outgoing connection is given (see ports.go). A
// process that names one of those ports itself can still take it while
// its member is stopped; Restart then fails the test, saying so.
package etcdtest

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"go.etcd.io/etcd/server/v3/embed"
	"golang.org/x/crypto/bcrypt"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// Options says what cluster to start. The zero value is one plain member.
type Options struct {
	// Members is the cluster size; 0 means 1.
	Members int
	// TLS serves clients and peers over TLS with certificates made for the
	// test (see CA) and requires a client certificate from clients.
	TLS bool
	// Auth enables etcd authentication: a root user, and a user User with
	// read-write permission on Prefix only.
	Auth bool
	// Prefix is the key prefix User may use; "" means "/sessdb/".
	Prefix string
	// TickMs and ElectionMs are raft's heartbeat and election timeout;
	// 0 means 50 and 500. Shorter ones elect faster after KillLeader but
	// make spurious elections likely on two loaded cores under -race.
	TickMs, ElectionMs uint
	// ProxyPeers puts a Proxy in front of each member's peer port, which
	// the members know it by: Partition cuts the network between them.
	ProxyPeers bool
	// Binary, when set, runs each member as a process of this etcd
	// binary (a released one: see ExternalBinary) with the same settings,
	// killed and waited for when the cluster closes. Such members have
	// no interceptor: FailNext, LoseNext, LoseNextAs and ExpireTokens
	// fail the test. Suspend and Continue are theirs alone.
	Binary string
	// InProcess keeps the members in this process whatever EverywhereEnv
	// says: the test makes its faults with FailNext, LoseNext(As) or
	// ExpireTokens, which only an embedded member's interceptor can.
	InProcess bool
}

// Credentials for a cluster started with Options.Auth.
const (
	RootPassword = "root-secret"   // etcd's root user's, which Cluster.Client logs in as
	User         = "sessdb"        // the user a client logs in as, limited to Options.Prefix
	Password     = "sessdb-secret" // User's
)

// Cluster is a running etcd cluster. Its methods fail the test on error and
// are not safe for concurrent use.
type Cluster struct {
	tb      testing.TB
	opts    Options
	token   string
	members []*member
	ports   []int // reserved until close
	logs    *logBuffer

	// CA, when the cluster runs TLS, issued every certificate: CAFile is
	// what a client trusts, CertFile and KeyFile a client certificate it
	// presents (common name User).
	CA                *CA
	CAFile            string // PEM file of CA's certificate; "" without TLS
	CertFile, KeyFile string // PEM files of the client certificate and its key

	faults faults // the requests FailNext fails
	tokens tokens // the tokens ExpireTokens made members forget

	peerProxies []*Proxy // Options.ProxyPeers': member i's is peerProxies[i]
}

// tokens are the auth tokens the members handed out, and those they are
// to take for forgotten (ExpireTokens).
type tokens struct {
	mu      sync.Mutex
	issued  []string
	expired map[string]bool
}

// ExpireTokens makes every member refuse each auth token handed out so
// far as etcd 3.4 does once a simple token sat unused for its TTL
// (--auth-token-ttl, 300 s by default): "invalid auth token", for every
// request that carries it, Authenticate included (etcd 3.5 and later
// ignore the token of an Authenticate, and so a client never finds out
// there what a 3.4 member does). It is safe to call while requests are
// served.
func (c *Cluster) ExpireTokens() {
	if !c.inProcess("ExpireTokens") {
		return
	}
	c.tokens.mu.Lock()
	defer c.tokens.mu.Unlock()
	if c.tokens.expired == nil {
		c.tokens.expired = map[string]bool{}
	}
	for _, t := range c.tokens.issued {
		c.tokens.expired[t] = true
	}
	c.tokens.issued = nil
}

// refused reports whether ctx carries a token ExpireTokens expired.
func (t *tokens) refused(ctx context.Context) bool {
	md, _ := metadata.FromIncomingContext(ctx)
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, tok := range md.Get(rpctypes.TokenFieldNameGRPC) {
		if t.expired[tok] {
			return true
		}
	}
	return false
}

func (t *tokens) issue(resp any) {
	if a, ok := resp.(*etcdserverpb.AuthenticateResponse); ok && a != nil && a.Token != "" {
		t.mu.Lock()
		defer t.mu.Unlock()
		t.issued = append(t.issued, a.Token)
	}
}

// faults says, by gRPC method, which requests are still to fail: skip
// more pass first, then n fail, after they were served if lost.
type faults struct {
	mu   sync.Mutex
	next map[string]*fault
}

type fault struct {
	skip, n int
	lost    bool
	// code, if not OK, is the lost answer's status code (LoseNextAs);
	// otherwise it is "leader changed".
	code codes.Code
	// served, if not nil, runs after each lost request took effect,
	// before its answer goes back (LoseNextAsAfter).
	served func()
}

// take reports whether a request of method is to fail, counting it, and
// whether it is to be served first (its answer lost), what runs once it
// was served (nil: nothing), and how it fails.
func (f *faults) take(method string) (fail, lost bool, served func(), answer error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	x := f.next[method]
	switch {
	case x == nil || x.n == 0:
		return false, false, nil, nil
	case x.skip > 0:
		x.skip--
		return false, false, nil, nil
	}
	x.n--
	if x.code != codes.OK {
		return true, x.lost, x.served, status.Errorf(x.code, "etcdtest: the answer was lost (%v)", x.code)
	}
	return true, x.lost, x.served, rpctypes.ErrGRPCLeaderChanged
}

// FailNext lets the next skip requests of method, a gRPC method's full
// name ("/etcdserverpb.KV/Txn"), through on every member, then fails n of
// them as etcd fails a request that a leader change overtook:
// Unavailable, "etcdserver: leader changed". The client's own retries see
// it as they see the real one (it retries a read-only Range, never a
// Txn). It replaces what an earlier FailNext, LoseNext or LoseNextAs of
// method left to do. Unlike the other methods, it is safe to call while
// requests are served.
func (c *Cluster) FailNext(method string, skip, n int) {
	c.setFault(method, fault{skip, n, false, codes.OK, nil})
}

// LoseNext is FailNext, but each of the n requests is served first: it
// takes effect, and its answer is lost, as when the member that committed
// it dies before it answers.
func (c *Cluster) LoseNext(method string, skip, n int) {
	c.setFault(method, fault{skip, n, true, codes.OK, nil})
}

// LoseNextAs is LoseNext, but each lost answer is a status of code:
// codes.DeadlineExceeded or codes.Canceled, as a hop between client and
// member (a gRPC proxy, a stream reset) may answer a request it passed
// on. etcd's client takes either for its own call's timeout and, while
// its caller's context lives, sends the request again by itself, a Txn
// too (its retry interceptor retries a context error whatever the
// request): the caller sees only the second try's answer, after the
// first took effect.
func (c *Cluster) LoseNextAs(method string, skip, n int, code codes.Code) {
	c.setFault(method, fault{skip, n, true, code, nil})
}

// LoseNextAsAfter is LoseNextAs, and served runs after each of the n
// requests took effect, before its lost answer goes back: what served
// does (another client's write) lands between the request and the
// client's own sending of it again, which waits for that answer. served
// runs on the member's goroutine serving the request, and may make
// requests of the cluster (they are served beside it); the n are counted
// before it runs, so its own requests of method pass.
func (c *Cluster) LoseNextAsAfter(method string, skip, n int, code codes.Code, served func()) {
	c.setFault(method, fault{skip, n, true, code, served})
}

func (c *Cluster) setFault(method string, f fault) {
	if !c.inProcess("FailNext and LoseNext") {
		return
	}
	c.faults.mu.Lock()
	defer c.faults.mu.Unlock()
	if c.faults.next == nil {
		c.faults.next = map[string]*fault{}
	}
	c.faults.next[method] = &f
}

type member struct {
	name, dir          string
	clientURL, peerURL url.URL
	// advertised is the peer URL the others dial: peerURL, or its proxy's.
	advertised url.URL
	etcd       *embed.Etcd // nil while stopped
	proc       *process    // Options.Binary's; nil while stopped
	// killed is set while kill stops the member (see recoverKilled);
	// inflight counts the requests its interceptor is serving.
	killed   atomic.Bool
	inflight atomic.Int64
	faults   *faults // the cluster's
	tokens   *tokens // the cluster's
}

// Start1 starts one plain member.
func Start1(tb testing.TB) *Cluster { return Start(tb, Options{Members: 1}) }

// Start3 starts three plain members.
func Start3(tb testing.TB) *Cluster { return Start(tb, Options{Members: 3}) }

// StartSecure starts n members with TLS and authentication.
func StartSecure(tb testing.TB, n int) *Cluster {
	return Start(tb, Options{Members: n, TLS: true, Auth: true})
}

// Start starts a cluster and waits until every member is ready to serve.
func Start(tb testing.TB, opts Options) *Cluster {
	tb.Helper()
	if opts.Members == 0 {
		opts.Members = 1
	}
	if opts.Prefix == "" {
		opts.Prefix = "/sessdb/"
	}
	if opts.TickMs == 0 {
		opts.TickMs = 50
	}
	if opts.ElectionMs == 0 {
		opts.ElectionMs = 500
	}
	if opts.Binary == "" && !opts.InProcess && os.Getenv(EverywhereEnv) != "" {
		if opts.Binary = os.Getenv(BinaryEnv); opts.Binary == "" {
			tb.Fatalf("etcdtest: %s is set, but %s names no etcd binary to run every cluster on", EverywhereEnv, BinaryEnv)
		}
	}
	c := &Cluster{tb: tb, opts: opts, logs: &logBuffer{}}
	// The test's first TempDir registers the removal of its temporary
	// dirs, and cleanups run last in, first out: one taken before close
	// is registered makes the members stop before their data dirs go. A
	// member that outlived its snap dir ended the test binary at its next
	// purge (etcd's fatal "failed to purge snap db file").
	tb.TempDir()
	tb.Cleanup(c.close)
	if opts.TLS {
		dir := tb.TempDir()
		c.CA = NewCA(tb, dir, "etcdtest CA")
		c.CAFile = c.CA.File
		c.CertFile, c.KeyFile = c.CA.Issue(tb, dir, User, false)
	}
	// A process that does not use this package can take a port between
	// its reservation and the member's bind; a fresh set of ports and data
	// dirs then almost always works.
	var err error
	for attempt := 0; attempt < 4; attempt++ {
		if err = c.startFresh(); err == nil || !errors.Is(err, syscall.EADDRINUSE) {
			break
		}
		c.stopAll()
	}
	if err != nil {
		tb.Fatalf("etcdtest: start %d members: %v", opts.Members, err)
	}
	if opts.Auth {
		c.enableAuth()
	}
	return c
}

func (c *Cluster) startFresh() error {
	releasePorts(c.ports)
	c.closeProxies()
	per := 2
	if c.opts.ProxyPeers {
		per = 3
	}
	ports, err := reservePorts(per * c.opts.Members)
	if err != nil {
		return err
	}
	c.ports = ports
	// A cluster token of its own: a member left from a failed attempt on
	// a reused port refuses to talk to this cluster instead of joining it.
	c.token = fmt.Sprintf("etcdtest-%d", time.Now().UnixNano())
	root := c.tb.TempDir()
	c.members = make([]*member, c.opts.Members)
	scheme := "http"
	if c.opts.TLS {
		scheme = "https"
	}
	for i := range c.members {
		m := &member{name: fmt.Sprintf("m%d", i), dir: filepath.Join(root, fmt.Sprintf("m%d", i)), faults: &c.faults, tokens: &c.tokens}
		m.clientURL = url.URL{Scheme: scheme, Host: fmt.Sprintf("127.0.0.1:%d", ports[per*i])}
		m.peerURL = url.URL{Scheme: scheme, Host: fmt.Sprintf("127.0.0.1:%d", ports[per*i+1])}
		m.advertised = m.peerURL
		if c.opts.ProxyPeers {
			m.advertised.Host = fmt.Sprintf("127.0.0.1:%d", ports[per*i+2])
		}
		c.members[i] = m
	}
	// Once every member is in place: the proxies read c.members.
	for _, m := range c.members {
		if c.opts.ProxyPeers {
			p, err := newProxy(m.advertised.Host, m.peerURL.Host, c.peerOf)
			if err != nil {
				return err
			}
			c.peerProxies = append(c.peerProxies, p)
		}
	}
	return c.startMembers(c.members)
}

// startMembers starts ms at once (a member of a cluster is ready only once
// a quorum runs) and waits for each to be ready.
func (c *Cluster) startMembers(ms []*member) error {
	var first error
	for _, m := range ms {
		if c.opts.Binary != "" {
			if m.proc, first = c.startProcess(m); first != nil {
				break
			}
			continue
		}
		m.killed.Store(false)
		e, err := embed.StartEtcd(c.config(m))
		if err != nil {
			first = fmt.Errorf("member %s: %w", m.name, err)
			break
		}
		m.etcd = e
	}
	if first == nil {
		for _, m := range ms {
			wait := waitReady
			if m.proc != nil {
				wait = c.waitProcess
			}
			if err := wait(m); err != nil {
				first = err
				break
			}
		}
	}
	if first != nil {
		for _, m := range ms {
			m.close()
		}
	}
	return first
}

// readyTimeout bounds a member's start; a healthy start takes well under a
// second even on two loaded cores.
const readyTimeout = 60 * time.Second

// waitReady waits for m to serve, or for it to fail to start.
func waitReady(m *member) error {
	select {
	case <-m.etcd.Server.ReadyNotify():
		return nil
	case err := <-m.etcd.Err():
		return fmt.Errorf("member %s: %w", m.name, err)
	case <-time.After(readyTimeout):
		return fmt.Errorf("member %s: not ready after %v", m.name, readyTimeout)
	}
}

// config is m's embedded etcd configuration: loopback only, every member
// of c in its initial cluster, TLS on both the client and peer ports when
// the cluster runs TLS.
func (c *Cluster) config(m *member) *embed.Config {
	cfg := embed.NewConfig()
	cfg.Name = m.name
	cfg.Dir = m.dir
	cfg.ListenClientUrls = []url.URL{m.clientURL}
	cfg.AdvertiseClientUrls = []url.URL{m.clientURL}
	cfg.ListenPeerUrls = []url.URL{m.peerURL}
	cfg.AdvertisePeerUrls = []url.URL{m.advertised}
	var initial []string
	for _, o := range c.members {
		initial = append(initial, o.name+"="+o.advertised.String())
	}
	cfg.InitialCluster = strings.Join(initial, ",")
	cfg.InitialClusterToken = c.token
	cfg.TickMs, cfg.ElectionMs = c.opts.TickMs, c.opts.ElectionMs
	// The gateway dials the member's own gRPC port: goroutines and a
	// connection no test uses.
	cfg.EnableGRPCGateway = false
	// bcrypt at its default cost is ~70 ms of CPU per authentication under
	// -race; the cost changes nothing a test checks.
	cfg.BcryptCost = uint(bcrypt.MinCost)
	cfg.LogLevel = "warn"
	cfg.GRPCAdditionalServerOptions = []grpc.ServerOption{grpc.ChainUnaryInterceptor(m.recoverKilled)}
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(c.logs.logger(m.name))
	if c.opts.TLS {
		certFile, keyFile := c.CA.Issue(c.tb, filepath.Dir(m.dir), m.name, true)
		cfg.ClientTLSInfo.CertFile, cfg.ClientTLSInfo.KeyFile = certFile, keyFile
		cfg.ClientTLSInfo.TrustedCAFile, cfg.ClientTLSInfo.ClientCertAuth = c.CAFile, true
		cfg.PeerTLSInfo = cfg.ClientTLSInfo
	}
	return cfg
}

// Endpoints returns every member's client URL, running or not, in member
// order; a client given all of them survives any one member's loss.
func (c *Cluster) Endpoints() []string {
	eps := make([]string, len(c.members))
	for i, m := range c.members {
		eps[i] = m.clientURL.String()
	}
	return eps
}

// Endpoint returns member i's client URL.
func (c *Cluster) Endpoint(i int) string { return c.members[i].clientURL.String() }

// Size is the number of members, running or not.
func (c *Cluster) Size() int { return len(c.members) }

// Running reports whether member i is running.
func (c *Cluster) Running(i int) bool { return c.members[i].running() }

func (m *member) running() bool { return m.etcd != nil || m.proc != nil }

// Leader waits until the running members agree on a running leader and
// returns its index.
func (c *Cluster) Leader() int {
	c.tb.Helper()
	deadline := time.Now().Add(readyTimeout)
	for time.Now().Before(deadline) {
		if i, ok := c.agreedLeader(); ok {
			return i
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.tb.Fatalf("etcdtest: no leader after %v", readyTimeout)
	return -1
}

func (c *Cluster) agreedLeader() (int, bool) {
	leader, idx := uint64(0), -1
	ids := make([]uint64, len(c.members))
	for i, m := range c.members {
		var l uint64
		switch {
		case m.etcd != nil:
			l, ids[i] = m.etcd.Server.Lead(), uint64(m.etcd.Server.MemberID())
		case m.proc != nil:
			// A member that does not answer (suspended) agrees to nothing.
			l, ids[i], _ = c.status(m, time.Second)
		default:
			continue
		}
		if l == 0 || (leader != 0 && l != leader) {
			return -1, false
		}
		leader = l
	}
	for i, m := range c.members {
		if m.running() && ids[i] == leader {
			idx = i
		}
	}
	return idx, idx >= 0
}

// KillLeader stops the leader without handing its leadership over (as a
// crash would: the others must time out and elect a new one) and returns
// its index. The member's data dir stays for Restart.
func (c *Cluster) KillLeader() int {
	c.tb.Helper()
	i := c.Leader()
	m := c.members[i]
	m.kill()
	return i
}

// Stop stops member i gracefully (a leader hands its leadership over
// first). Its data dir stays for Restart.
func (c *Cluster) Stop(i int) {
	c.tb.Helper()
	if !c.members[i].running() {
		c.tb.Fatalf("etcdtest: member %d is not running", i)
	}
	c.members[i].close()
}

// Restart starts a stopped member again from its data dir, on the same
// ports, and waits until it is ready (which needs a quorum running).
func (c *Cluster) Restart(i int) {
	c.tb.Helper()
	if c.members[i].running() {
		c.tb.Fatalf("etcdtest: member %d is running", i)
	}
	if err := c.startMembers(c.members[i : i+1]); err != nil {
		c.tb.Fatalf("etcdtest: restart member %d: %v", i, err)
	}
}

// RestartAll kills every running member (as a power cut would: no
// leadership transfer, nothing flushed but what etcd had fsynced) and
// starts them all again from their data dirs.
func (c *Cluster) RestartAll() {
	c.tb.Helper()
	c.stopAll()
	if err := c.startMembers(c.members); err != nil {
		c.tb.Fatalf("etcdtest: restart all: %v", err)
	}
}

// stopAll kills every member at once. Stopping them gracefully at once
// costs seconds: a leader's Close hands its leadership to a follower that
// is closing too, and waits out etcd's request timeout.
func (c *Cluster) stopAll() {
	var wg sync.WaitGroup
	for _, m := range c.members {
		wg.Go(m.kill)
	}
	wg.Wait()
}

// Close stops every member. Cleanup calls it; a benchmark that starts
// clusters in its loop calls it itself. Calling it again does nothing.
func (c *Cluster) Close() { c.close() }

func (c *Cluster) close() {
	c.stopAll()
	c.closeProxies()
	releasePorts(c.ports)
	c.ports = nil
	if c.tb.Failed() {
		c.tb.Logf("etcd log (warnings and errors):\n%s", c.logs.String())
	}
}

// kill ends raft at once (HardStop); the Close after it finds raft
// stopped and closes the listeners without a leadership transfer.
//
// New requests are refused first, and the ones being served get a moment
// to finish (killDrain): a read that finds the database closed under it
// panics inside etcd's read transaction while holding its lock, and
// although recoverKilled answers it, the lock stays held, so every read
// after it blocks, and the Close after HardStop waits for them for ever
// (seen once under TestJobsUnderFaults: a 10-minute test timeout).
func (m *member) kill() {
	if m.proc != nil {
		m.proc.end(syscall.SIGKILL)
		m.proc = nil
	}
	if m.etcd == nil {
		return
	}
	m.killed.Store(true)
	for end := time.Now().Add(killDrain); m.inflight.Load() > 0 && time.Now().Before(end); {
		time.Sleep(time.Millisecond)
	}
	m.etcd.Server.HardStop()
	m.close()
}

// killDrain bounds how long kill waits for the requests being served: a
// read takes microseconds; a write waiting on raft may not finish, and
// HardStop ends it without a read of the database.
const killDrain = 200 * time.Millisecond

// recoverKilled answers a request that panicked because kill closed the
// member's database under it with Unavailable, what a client gets when a
// member's process dies. HardStop does not wait for the reads the member
// is still serving (etcd's own test framework stops its gRPC server
// first, which embed does not let a caller do); with the member in this
// process, one such read (a nil bbolt transaction, seen under
// TestJobsUnderFaults) would take the whole test binary down. Any other
// panic is raised again. It also fails the requests FailNext and LoseNext
// asked for (and LoseNextAs).
func (m *member) recoverKilled(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
	// Counted before killed is read, as kill sets killed before it reads
	// the count: either kill waits for this request or this request sees
	// killed. Read first, a request preempted between the two reached
	// the database after HardStop, uncounted.
	m.inflight.Add(1)
	defer m.inflight.Add(-1)
	if m.killed.Load() {
		return nil, status.Errorf(codes.Unavailable, "etcdtest: member %s killed", m.name)
	}
	var fail, lost bool
	var answer error
	var served func()
	if m.faults != nil && info != nil {
		fail, lost, served, answer = m.faults.take(info.FullMethod)
	}
	if fail && !lost {
		return nil, answer
	}
	if m.tokens != nil && m.tokens.refused(ctx) {
		return nil, rpctypes.ErrGRPCInvalidAuthToken
	}
	defer func() {
		if r := recover(); r != nil {
			if !m.killed.Load() {
				panic(r)
			}
			resp, err = nil, status.Errorf(codes.Unavailable, "etcdtest: member %s killed under the request: %v", m.name, r)
		}
	}()
	resp, err = handler(ctx, req)
	if m.tokens != nil {
		m.tokens.issue(resp)
	}
	if lost {
		if served != nil {
			served()
		}
		return nil, answer
	}
	return resp, err
}

func (m *member) close() {
	if m.proc != nil {
		m.proc.end(syscall.SIGTERM)
		m.proc = nil
	}
	if m.etcd == nil {
		return
	}
	m.etcd.Close()
	m.etcd = nil
}

// ctx is a bounded context for the harness's own client calls.
func ctx(tb testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), readyTimeout)
	tb.Cleanup(cancel)
	return c
}
