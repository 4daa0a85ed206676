package etcdmeta

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/status"

	"sessdb/internal/callerctx"
	"sessdb/internal/faults"
)

// Store is the record store on one etcd cluster. It is safe for concurrent
// use by multiple goroutines; every method bounds its wait by the request
// timeout (Lock: by LockWait) as well as by its context.
type Store struct {
	cli    *clientv3.Client
	cfg    settings
	closed atomic.Bool
	// hedgeOff sends every request once, as with one endpoint: a test's
	// knob (BenchmarkHedge), no option of the package's.
	hedgeOff bool

	// pins are cli's connections to one endpoint each, made when a
	// hedged request is first sent again (see Hedge and toPinned); turn
	// picks the members a hedged request's later tries go to.
	pinMu sync.Mutex
	pins  []*grpc.ClientConn
	turn  atomic.Uint32
	// tryLabels label each try's goroutine (see TryLabel).
	tryLabels pprof.LabelSet

	// lastSeq remembers each key's newest history slot as this Store last
	// saw it (Get, a write, a conflict), so that the write after a Get,
	// which a promotion always is, claims its slot without a read first.
	// A stale guess only costs a retry: the slot is claimed by compare.
	mu      sync.Mutex
	lastSeq map[string]uint64

	// loginState is the state of the client's connection when a login
	// last failed, plus one (0: none failed): Open's failed login leaves
	// no connection to ask, clientv3.New closing it before it returns
	// (see noteLogin).
	loginState atomic.Int32
}

// maxSeqCache bounds lastSeq; past it the cache starts over.
const maxSeqCache = 4096

func (s *Store) rememberSeq(key string, seq uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lastSeq == nil || len(s.lastSeq) >= maxSeqCache {
		s.lastSeq = make(map[string]uint64)
	}
	s.lastSeq[key] = seq
}

// guessSeq takes a record's hint of key's newest history slot where it
// is above what this Store remembers: the record was written since. A
// hint of 0 is none, and leaves the slot to be looked up.
func (s *Store) guessSeq(key string, hint uint64) {
	if hint == 0 {
		return
	}
	if seq, ok := s.cachedSeq(key); ok && seq >= hint {
		return
	}
	s.rememberSeq(key, hint)
}

func (s *Store) cachedSeq(key string) (uint64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	seq, ok := s.lastSeq[key]
	return seq, ok
}

func newestSeq(h []HistoryEntry) uint64 {
	if len(h) == 0 {
		return 0
	}
	return h[len(h)-1].Seq
}

// State is what a key held at one revision: its record, the record's mod
// revision, and its newest history entries.
type State struct {
	// Rev is the record's mod revision; 0 means the key has no record.
	Rev Rev
	// Record is the record; the zero Record when Rev is 0.
	Record Record
	// History holds the newest HistoryLimit entries at most, oldest first.
	History []HistoryEntry
	// Read is the store revision the state was read at.
	Read Rev
	// Bytes is what etcd holds for the key as read: the sizes of the
	// record's etcd key and value and of each history entry's read
	// (the newest HistoryLimit), whether they decode or not. Set where
	// the history is read with the record (Get, a ConflictError's
	// Current); 0 from GetRecord and PeekRecord.
	Bytes int64
	// HistoryRead is how many history entries were read, whether they
	// decode or not: HistoryLimit where the ring is full, though History
	// holds fewer where one does not decode. Set where Bytes is.
	HistoryRead int
}

// Open validates cfg and connects. With a Username it logs in, which needs
// a member within DialTimeout; without one, Open does not wait for etcd
// and the first request finds out whether it answers. A Config error is
// ErrInvalidConfig naming the field.
func Open(cfg Config) (*Store, error) {
	set, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	s := &Store{cfg: set, tryLabels: pprof.Labels(TryLabel, strings.Join(set.Endpoints, ","))}
	s.cli, err = clientv3.New(clientv3.Config{
		Endpoints:   set.Endpoints,
		DialTimeout: set.DialTimeout,
		// A dead connection is noticed within seconds instead of at the
		// next request's timeout (see keepAliveTimeout).
		DialKeepAliveTime:    keepAliveTime,
		DialKeepAliveTimeout: set.keepAliveTimeout(),
		TLS:                  set.tls,
		Username:             set.Username,
		Password:             set.Password,
		// The client's own log would write JSON lines to stderr, which is
		// the CLI's diagnostics channel; every failure is returned instead.
		Logger: zap.NewNop(),
		// The members are dialled directly: gRPC would tunnel each
		// connection through HTTPS_PROXY (a worker's, set for its
		// downloads), where a proxy that refuses is every request's
		// timeout, the proxy never named, and one that passes it on
		// carries a plain member's login, the password in it. A hop to
		// etcd is an endpoint of its own (etcd's gRPC proxy).
		DialOptions: []grpc.DialOption{grpc.WithNoProxy(), grpc.WithChainUnaryInterceptor(forgetRefusedToken, s.noteLogin, s.toPinned, countSends, boundRecv)},
	})
	if err != nil {
		// A plain client's login that failed while its connections did is
		// probed as a request so failing is (see opErr): an http://
		// endpoint of a TLS-only member is named at the login too.
		set.connState = s.failedLoginState
		return nil, set.opErr(context.Background(), "etcd open", strings.Join(set.Endpoints, ","), err)
	}
	s.cfg.connState = s.cli.ActiveConnection().GetState
	return s, nil
}

// keepAliveTime is how long a connection that has read nothing goes
// before gRPC pings it: the least gRPC takes (it raises anything lower).
// A connection left silent (a firewall or NAT that forgot it during an
// outage; a member that takes connections and answers nothing) is closed
// once a ping has no answer within keepAliveTimeout, and the next request
// makes a new one. A busy host's silent connection is pinged keepAliveTime
// after its last read; an idle host's (no request in flight: gRPC sends
// no ping then) at its first request, at once. PermitWithoutStream, which
// would ping idle connections too, is left off: etcd's server allows it
// to no client (embed's enforcement policy), and closes the connection
// of one that pings so ("too many pings").
const keepAliveTime = 10 * time.Second

// keepAliveTimeout is how long a ping waits for its answer: the request
// timeout, at most 3 s. A ping is answered by the member's transport, not
// by etcd, so it waits no queue a request does: a connection that cannot
// answer one within the time a request is given has nothing to give a
// request either, and every request sent over it until it is closed
// fails. 3 s was the fixed wait before, whatever the request timeout:
// with the default 5 s timeout it still is, with a shorter one the silent
// connection is closed that much sooner (TestASilentConnectionIsClosedWithinTheKeepalive).
func (s settings) keepAliveTimeout() time.Duration {
	return min(s.RequestTimeout, 3*time.Second)
}

// forgetRefusedToken runs inside the client's own retries. When a member
// has forgotten the client's auth token (an etcd 3.4 member once the token
// sat unused for --auth-token-ttl, 300 s by default), the client logs in
// again, but sends the forgotten token with the Authenticate, and a 3.4
// member refuses that too, "invalid auth token": the client then logs in
// again and again with it until the request's deadline, and every later
// request does the same. Answered as a member with authentication off
// answers, the client drops the token; the request is then refused for
// want of one, and the client logs in afresh, without it. A login the
// member refuses for its credentials is refused as before, on that next
// try.
func forgetRefusedToken(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	err := invoker(ctx, method, req, reply, cc, opts...)
	if method == "/etcdserverpb.Auth/Authenticate" && errors.Is(rpctypes.Error(err), rpctypes.ErrInvalidAuthToken) {
		return rpctypes.ErrGRPCAuthNotEnabled
	}
	return err
}

// noteLogin keeps the state of the connection a login failed on, as it
// was when the login's answer came (see loginState): the gate of a plain
// client's probe after a failed Open, as the connection's state is after
// a failed request.
func (s *Store) noteLogin(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	err := invoker(ctx, method, req, reply, cc, opts...)
	if err != nil && method == "/etcdserverpb.Auth/Authenticate" {
		s.loginState.Store(int32(cc.GetState()) + 1)
	}
	return err
}

// failedLoginState is the state noteLogin kept, or Idle where no login
// failed.
func (s *Store) failedLoginState() connectivity.State {
	if st := s.loginState.Load(); st > 0 {
		return connectivity.State(st - 1)
	}
	return connectivity.Idle
}

// sendsKey is the context key of a request's count of sends (withSends).
type sendsKey struct{}

// withSends is ctx, carrying a count of the sends of the request made
// with it (countSends).
func withSends(ctx context.Context) (context.Context, *atomic.Int32) {
	n := new(atomic.Int32)
	return context.WithValue(ctx, sendsKey{}, n), n
}

// countSends counts each send of a request whose context carries a count
// (withSends). It runs inside etcd's client's own retries (gRPC puts the
// interceptor the client sets with WithUnaryInterceptor, its retries,
// outside every chained one), as the last of the interceptors (a pinned
// request's sends pass through its pin's), so a count above one is a
// request the client sent again itself: it does so, a write too, when
// an answer is a context error's (Canceled, DeadlineExceeded: a hop
// between here and the member) while the caller's context lives, and the
// caller sees only the last answer, though an earlier send may have been
// served.
func countSends(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	if n, ok := ctx.Value(sendsKey{}).(*atomic.Int32); ok {
		n.Add(1)
	}
	return invoker(ctx, method, req, reply, cc, opts...)
}

// pinKey is the context key of the endpoint a hedged try goes to alone
// (its index in the Config's Endpoints): see Hedge.
type pinKey struct{}

// toPinned sends a request whose context names an endpoint (a hedged
// try sent again) to that endpoint alone, over a connection of its own,
// rather than to the member the balancer's turn gives it: that turn is
// one for every request of the Store, so where other requests go out
// between a request's tries each try can meet the same member. A pinned
// request to a member that cannot be reached waits for it, as every
// request of etcd's client waits for a connection, until its context
// ends; Hedge's other try sent again goes to another member. Every
// connection's requests pass through here, a pin's own too: those, and
// the requests that name no endpoint, are sent as they are.
func (s *Store) toPinned(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	k, ok := ctx.Value(pinKey{}).(int)
	if !ok || s.isPin(cc) {
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	pin := s.pin(k)
	if pin == nil {
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	// A connection whose dials failed (its member down, or unreachable)
	// is dialled again now rather than at the end of gRPC's backoff,
	// which grows over an outage to two minutes: a try sent to a member
	// back since would wait it out, whatever its timeout (reconnect does
	// this for the balancer's connection, and as it does, again while the
	// try waits). A member still down costs a dial per redialEvery while
	// a try sent to it waits, and only a try sent again is.
	redialWhile(ctx, pin)
	return pin.Invoke(ctx, method, req, reply, opts...)
}

// pin is the connection to the kth endpoint alone, made at its first
// use; nil once the Store is closed, or where it cannot be made.
func (s *Store) pin(k int) *grpc.ClientConn {
	s.pinMu.Lock()
	defer s.pinMu.Unlock()
	if s.closed.Load() {
		return nil
	}
	if s.pins == nil {
		s.pins = make([]*grpc.ClientConn, len(s.cfg.Endpoints))
	}
	if s.pins[k] == nil {
		// Dial shares cli's credentials and auth token: no login more.
		conn, err := s.cli.Dial(s.cfg.Endpoints[k])
		if err != nil {
			return nil
		}
		s.pins[k] = conn
	}
	return s.pins[k]
}

func (s *Store) isPin(cc *grpc.ClientConn) bool {
	s.pinMu.Lock()
	defer s.pinMu.Unlock()
	return slices.Contains(s.pins, cc)
}

// Close releases the connections; locks still held are released as their
// leases end. Calling Close again does nothing.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.pinMu.Lock()
	for _, pin := range s.pins {
		if pin != nil {
			pin.Close()
		}
	}
	s.pinMu.Unlock()
	return s.cli.Close()
}

// Several reports whether the Store was given more than one endpoint:
// a request sent again then goes to another member (see hedged).
func (s *Store) Several() bool { return len(s.cfg.Endpoints) > 1 }

// Prefix is the validated prefix the records live under.
func (s *Store) Prefix() string { return s.cfg.Prefix }

// RecordKey is the etcd key of key's record, as an operator names it to
// etcdctl.
func (s *Store) RecordKey(key string) string { return s.recordKey(key) }

// HistoryDir is the etcd prefix of key's history entries, as an operator
// names it to etcdctl del --prefix.
func (s *Store) HistoryDir(key string) string { return s.historyDir(key) }

// BareHistoryKey is the etcd key at the bare name of key's history,
// HistoryDir without its last "/": no entry's, and none of this package's
// writes (see HistoryNames).
func (s *Store) BareHistoryKey(key string) string {
	return strings.TrimSuffix(s.historyDir(key), "/")
}

// HasHistoryEntries reports whether etcd holds a key under
// HistoryDir(name), read linearizably, count only. name may be no key
// (a name HistoryNames gave): it is read as given, with no "/" in it.
func (s *Store) HasHistoryEntries(ctx context.Context, name string) (bool, error) {
	ctx = callerctx.Of(ctx)
	if strings.Contains(name, "/") {
		return false, fmt.Errorf("history entries %q: %w", name, ErrInvalidKey)
	}
	c, cancel, err := s.start(ctx, "get history of "+name)
	if err != nil {
		return false, err
	}
	defer cancel()
	resp, err := hedged(s, c, func(c context.Context) (*clientv3.GetResponse, error) {
		return s.cli.Get(c, s.historyDir(name), clientv3.WithPrefix(), clientv3.WithCountOnly())
	})
	if err != nil {
		return false, s.cfg.opErr(ctx, "get", name, err)
	}
	return resp.Count > 0, nil
}

// HasBareHistoryKey reports whether etcd holds a key at BareHistoryKey(key),
// read linearizably, keys only.
func (s *Store) HasBareHistoryKey(ctx context.Context, key string) (bool, error) {
	ctx = callerctx.Of(ctx)
	c, cancel, err := s.begin(ctx, "get", key)
	if err != nil {
		return false, err
	}
	defer cancel()
	resp, err := hedged(s, c, func(c context.Context) (*clientv3.GetResponse, error) {
		return s.cli.Get(c, s.BareHistoryKey(key), clientv3.WithCountOnly())
	})
	if err != nil {
		return false, s.cfg.opErr(ctx, "get", key, err)
	}
	return resp.Count > 0, nil
}

// HistoryKey is the etcd key of key's history entry at seq.
func (s *Store) HistoryKey(key string, seq uint64) string { return s.historyKey(key, seq) }

func (s *Store) recordKey(key string) string  { return s.recordDir() + key }
func (s *Store) recordDir() string            { return s.cfg.Prefix + "/record/" }
func (s *Store) historyDir(key string) string { return s.cfg.Prefix + "/history/" + key + "/" }

// LastSlot reports whether a history entry at seq is in the last slot an
// entry takes (2^64-2: the slot above holds none, see parseSeq), or at
// 2^64-1 above it (ErrAboveLastSlot): no entry can follow it, so every
// write of its key (a promotion, a refusal, a reap's) is ErrDamaged
// until the key's history is numbered again (RenumberHistory). fleet's
// check reports such an entry, and its --repair renumbers it.
func LastSlot(seq uint64) bool { return seq >= math.MaxUint64-1 }

func (s *Store) historyKey(key string, seq uint64) string {
	return s.historyDir(key) + seqName(seq)
}
func (s *Store) lockDir(key string) string { return s.cfg.Prefix + "/lock/" + key }

// begin checks the key and the store and bounds ctx by the request timeout.
func (s *Store) begin(ctx context.Context, op, key string) (context.Context, context.CancelFunc, error) {
	if !ValidKey(key) {
		return nil, nil, fmt.Errorf("%s %q: %w", op, key, ErrInvalidKey)
	}
	return s.start(ctx, op+" "+key)
}

// start is begin for a request of no key's (the fleet's ID, whether it
// has a record): it checks the store and bounds ctx by the request
// timeout; what names the request in an error.
func (s *Store) start(ctx context.Context, what string) (context.Context, context.CancelFunc, error) {
	if s.closed.Load() {
		return nil, nil, fmt.Errorf("%s: %w", what, ErrClosed)
	}
	c, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	s.reconnect(c)
	return c, cancel, nil
}

// reconnect lets a request that finds no member reachable (the
// connection in transient failure) have gRPC reconnect now rather than at
// the end of its reconnect backoff. That backoff grows over an outage to
// two minutes, and every request until it ends fails though etcd answers
// again: each resolve of a long-running host a cold start. A connection
// with one member still reachable is not in transient failure, so a
// member that stays down is not redialled for every request.
//
// gRPC's reset wakes a connection waiting out its backoff and nothing
// else. One made while a dial is in flight (the connection stays in
// transient failure through the dials that follow the first that failed)
// is lost, and the backoff after that dial, if it fails, is waited out
// whole. So while the request c waits, and the connection stays in
// transient failure, the reset is made again every redialEvery (see
// redialWhile).
func (s *Store) reconnect(c context.Context) {
	if cc := s.cli.ActiveConnection(); cc != nil {
		redialWhile(c, cc)
	}
}

// redialWhile resets cc's reconnect backoff where cc is in transient
// failure, and again every redialEvery while it stays so and c lives: a
// request waiting on cc redials within redialEvery of a dial's failure,
// though the dial was in flight at the request. A member still down
// costs a dial per redialEvery while requests wait.
func redialWhile(c context.Context, cc *grpc.ClientConn) {
	if !resetBackoff(cc) {
		return
	}
	go func() {
		t := time.NewTicker(redialEvery)
		defer t.Stop()
		for {
			select {
			case <-c.Done():
				return
			case <-t.C:
			}
			if !resetBackoff(cc) {
				return
			}
		}
	}()
}

// redialEvery is how often a request waiting on a connection in transient
// failure has gRPC's reconnect backoff reset (see redialWhile).
const redialEvery = 250 * time.Millisecond

// resetBackoff resets cc's reconnect backoff where it is in transient
// failure, and reports whether it is.
func resetBackoff(cc *grpc.ClientConn) bool {
	if cc.GetState() != connectivity.TransientFailure {
		return false
	}
	cc.ResetConnectBackoff()
	return true
}

// hedged runs read, a request that changes nothing, within c, hedged
// (see Hedge): an error that is not c's end is the answer at once.
func hedged[R any](s *Store, c context.Context, read func(context.Context) (R, error)) (R, error) {
	return Hedge(s, c, read, func(error) bool { return c.Err() == nil }, nil)
}

// Hedge runs try within ctx; with several endpoints, when it has not
// answered within a third of the request timeout it is sent again, and
// once more at two thirds, again (if not nil) running before each. The
// first try goes where etcd's client sends it, the member next in its
// turn; each try sent again goes to one endpoint alone, the two of them
// to two different ones (see toPinned), so that one member that takes
// connections and answers nothing (a blackhole, a member stalled by a
// defragmentation) meets one of them at most. It would otherwise cost
// every request sent to it the whole timeout (every third, of three
// members, until gRPC's keepalive drops its connection, 13 s), though the
// others answer at once; and the client's turn alone, shared by all the
// Store's requests, could hand one request's three tries the same member
// where two others went out between each. try must be safe to run more than once at the
// same time: a read, or a write that lands once at most however many
// times it is sent (a guarded write on one base). The answer is the first
// success, or the first error for which ends is true; otherwise the last
// error, once no try is left in flight. The tries still in flight when
// Hedge returns are cancelled.
func Hedge[R any](s *Store, ctx context.Context, try func(context.Context) (R, error), ends func(error) bool, again func()) (R, error) {
	// A ctx the store bounded over a caller's it holds (a request's
	// timeout, set by begin with context.WithTimeout) keeps Go's contract
	// already, and its deadline is the store's own: taken as it is, so
	// that each try's request carries it to etcd (grpc-timeout), a bound
	// for the member too. Any other is held here (callerctx.Of), its
	// deadline hidden: a caller's that lies bounds nothing.
	if _, own := callerctx.Bound(ctx); !own {
		ctx = callerctx.Of(ctx)
	}
	if !s.Several() || s.hedgeOff {
		return try(ctx)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		r   R
		err error
	}
	const tries = 3
	answers := make(chan result, tries)
	// Taken modulo the endpoints before it is added to: a turn past 2^31
	// is no negative int where int has 32 bits, and one at the wrap of
	// 2^32 gives the two tries two endpoints still.
	n := len(s.cfg.Endpoints)
	turn := int(s.turn.Add(1) % uint32(n))
	send := func(i int) {
		c := ctx
		if i > 0 {
			c = context.WithValue(ctx, pinKey{}, (turn+i)%n)
		}
		go pprof.Do(c, s.tryLabels, func(c context.Context) {
			r, err := try(c)
			answers <- result{r, err}
		})
	}
	send(0)
	sent, waiting := 1, 1
	tick := time.NewTicker(s.cfg.RequestTimeout / tries)
	defer tick.Stop()
	for {
		select {
		case a := <-answers:
			waiting--
			if a.err == nil || waiting == 0 || ends(a.err) {
				return a.r, a.err
			}
		case <-tick.C:
			if sent < tries && ctx.Err() == nil {
				if again != nil {
					again()
				}
				send(sent)
				sent, waiting = sent+1, waiting+1
			}
		}
	}
}

// TryLabel is the profiler label (runtime/pprof) on the goroutine of each
// try a hedged request sends (see Hedge); its value is the Store's
// endpoints, comma-separated. A goroutine profile (debug=1) of a worker
// whose requests wait thus names the cluster each try waits on, and a
// test can count the tries its own Store left running beside another
// test's.
const TryLabel = "sessdb-etcd-try"

// stateOps read a key's state, with opts added to both reads; Get runs
// them alone, the guarded writes run them when their compare fails, and an
// append (serializable) before it takes its guess.
func (s *Store) stateOps(key string, opts ...clientv3.OpOption) []clientv3.Op {
	return []clientv3.Op{
		clientv3.OpGet(s.recordKey(key), opts...),
		clientv3.OpGet(s.historyDir(key), append([]clientv3.OpOption{clientv3.WithPrefix(),
			clientv3.WithSort(clientv3.SortByKey, clientv3.SortDescend), clientv3.WithLimit(HistoryLimit)}, opts...)...),
	}
}

// parseState decodes the responses of stateOps, whose history was read
// under dir (the key's historyDir). A damaged record still yields its
// Rev (a repair can replace it, guarded); a damaged history entry is an
// error with the rest of the state. An entry's name is all of its key
// past dir: one of more than one segment (another tool's) is no slot's,
// though its last may be. An entry at the name above the last slot
// (aboveLastSlot) is in the state, at that seq, and ErrAboveLastSlot
// where it is the only damage.
func parseState(key, dir string, read int64, rs []*pb.ResponseOp) (State, error) {
	st := State{Read: Rev(read)}
	var first, above error
	for _, r := range rs[:2] {
		for _, kv := range r.GetResponseRange().Kvs {
			st.Bytes += int64(len(kv.Key) + len(kv.Value))
		}
	}
	if kvs := rs[0].GetResponseRange().Kvs; len(kvs) > 0 {
		st.Rev = Rev(kvs[0].ModRevision)
		rec, err := decodeRecord(kvs[0].Value)
		if err != nil {
			first = err
		}
		st.Record = rec
	}
	hist := rs[1].GetResponseRange().Kvs
	st.HistoryRead = len(hist)
	for i := len(hist) - 1; i >= 0; i-- {
		kv := hist[i]
		name := strings.TrimPrefix(string(kv.Key), dir)
		seq, ok := parseSeq(name)
		if !ok && name == aboveLastSlot {
			seq, above = math.MaxUint64, fmt.Errorf("%w: %w: history entry %s is above the last slot an entry takes (an older sessdb's, or another binary's): no entry can follow it (check --repair numbers the history again)", ErrDamaged, ErrAboveLastSlot, name)
		} else if !ok {
			if first == nil {
				first = fmt.Errorf("%w: history entry name %s", ErrDamaged, quoteName(name))
			}
			continue
		}
		e, err := decodeHistory(seq, kv.Value)
		if err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		st.History = append(st.History, e)
	}
	if first == nil {
		first = above
	}
	if first != nil {
		first = fmt.Errorf("get %s: %w", key, first)
	}
	return st, first
}

// Get reads key's record, its mod revision and its newest history entries
// in one linearizable read: all three as of one revision. A key with no
// record is State{Rev: 0} and no error. A record that does not decode is
// ErrDamaged or ErrNewerSchema, returned with the State's Rev and History.
func (s *Store) Get(ctx context.Context, key string) (State, error) {
	ctx = callerctx.Of(ctx)
	c, cancel, err := s.begin(ctx, "get", key)
	if err != nil {
		return State{}, err
	}
	defer cancel()
	// A transaction without compares reads every op at one revision, and
	// etcd serves it linearizably.
	resp, err := hedged(s, c, func(c context.Context) (*clientv3.TxnResponse, error) {
		return s.cli.Txn(c).Then(s.stateOps(key)...).Commit()
	})
	if err != nil {
		return State{}, s.cfg.opErr(ctx, "get", key, err)
	}
	st, err := parseState(key, s.historyDir(key), resp.Header.Revision, resp.Responses)
	if err == nil {
		s.rememberSeq(key, newestSeq(st.History))
	}
	return st, err
}

// GetManyMost is how many keys one GetMany reads at most: two operations
// a key, within etcd's default --max-txn-ops of 128.
const GetManyMost = 32

// GetMany is Get of each of keys (at most GetManyMost, each valid) in one
// linearizable read: every key's record, mod revision and newest history
// entries, all as of one revision. states[i] and errs[i] are what Get of
// keys[i] would have returned at that revision (a record or entry that
// does not decode: ErrDamaged or ErrNewerSchema with the rest of the
// state). err is the read's own (etcd unavailable, a refused request,
// an answer over List's bound on a page's bytes, too many keys, an
// invalid key): no state is given; Get of each key alone reads it.
func (s *Store) GetMany(ctx context.Context, keys []string) (states []State, errs []error, err error) {
	ctx = callerctx.Of(ctx)
	if len(keys) == 0 || len(keys) > GetManyMost {
		return nil, nil, fmt.Errorf("get %d keys at once: %w", len(keys), ErrInvalidArgument)
	}
	for _, k := range keys {
		if !ValidKey(k) {
			return nil, nil, fmt.Errorf("get %q: %w", k, ErrInvalidKey)
		}
	}
	c, cancel, err := s.start(ctx, fmt.Sprintf("get %d keys from %s", len(keys), keys[0]))
	if err != nil {
		return nil, nil, err
	}
	defer cancel()
	ops := make([]clientv3.Op, 0, 2*len(keys))
	for _, k := range keys {
		ops = append(ops, s.stateOps(k)...)
	}
	// Bounded as a List page is: the keys' values may be another
	// binary's, as large as etcd takes, and a batch holds many keys'.
	rb := &recvBound{bytes: listPageBytes}
	c = context.WithValue(c, recvBoundKey{}, rb)
	resp, err := hedged(s, c, func(c context.Context) (*clientv3.TxnResponse, error) {
		return s.cli.Txn(c).Then(ops...).Commit()
	})
	if err != nil {
		if size := rb.refused.Load(); size != 0 {
			return nil, nil, fmt.Errorf("get %d keys from %s: an answer of %d bytes, over its bound of %d: %w", len(keys), keys[0], max(size, 0), listPageBytes, ErrInvalidArgument)
		}
		return nil, nil, s.cfg.opErr(ctx, "get", keys[0], err)
	}
	if len(resp.Responses) != 2*len(keys) {
		return nil, nil, fmt.Errorf("get %d keys: %d answers: %w", len(keys), len(resp.Responses), ErrDamaged)
	}
	states, errs = make([]State, len(keys)), make([]error, len(keys))
	for i, k := range keys {
		states[i], errs[i] = parseState(k, s.historyDir(k), resp.Header.Revision, resp.Responses[2*i:2*i+2])
		if errs[i] == nil {
			s.rememberSeq(k, newestSeq(states[i].History))
		}
	}
	return states, errs, nil
}

// GetRecord reads key's record and its mod revision in one linearizable
// read, and no history: what a resolve needs, at the cost of one
// single-key read (BenchmarkGetRecord; Get, which reads the newest
// HistoryLimit entries too, costs several times more). A key with no
// record is State{Rev: 0}; a record that does not decode is ErrDamaged or
// ErrNewerSchema, returned with the State's Rev. History is nil.
func (s *Store) GetRecord(ctx context.Context, key string) (State, error) {
	ctx = callerctx.Of(ctx)
	return s.getRecord(ctx, key)
}

// PeekRecord reads key's record and its mod revision from the member this
// client talks to, serializably: no round through the leader, so the
// member may be behind the cluster, and nothing is proved about the record
// now (only a guarded write does). It is what a writer that takes a
// ticket's base for the key's state needs, to see cheaply whether the key
// has visibly moved on before it writes anything. Errors are GetRecord's.
func (s *Store) PeekRecord(ctx context.Context, key string) (State, error) {
	ctx = callerctx.Of(ctx)
	return s.getRecord(ctx, key, clientv3.WithSerializable())
}

// getRecord is GetRecord and PeekRecord: one read of key's record, with
// opts.
func (s *Store) getRecord(ctx context.Context, key string, opts ...clientv3.OpOption) (State, error) {
	c, cancel, err := s.begin(ctx, "get", key)
	if err != nil {
		return State{}, err
	}
	defer cancel()
	resp, err := hedged(s, c, func(c context.Context) (*clientv3.GetResponse, error) {
		return s.cli.Get(c, s.recordKey(key), opts...)
	})
	if err != nil {
		return State{}, s.cfg.opErr(ctx, "get", key, err)
	}
	st := State{Read: Rev(resp.Header.Revision)}
	if len(resp.Kvs) == 0 {
		return st, nil
	}
	st.Rev = Rev(resp.Kvs[0].ModRevision)
	var hint uint64
	if st.Record, hint, err = decodeRecordHint(resp.Kvs[0].Value); err != nil {
		return st, fmt.Errorf("get %s: %w", key, err)
	}
	s.guessSeq(key, hint)
	return st, nil
}

// Put writes rec as key's record and appends hist to its history, in one
// transaction guarded by base: it commits only if the record's mod
// revision is still base (0: only if the key has no record). It returns
// the record's new revision. A lost compare is a *ConflictError carrying
// what the key holds instead; nothing is written. hist.Seq is assigned.
//
// The history keeps its newest HistoryLimit entries: the oldest beyond are
// deleted in the same transaction.
func (s *Store) Put(ctx context.Context, key string, base Rev, rec Record, hist HistoryEntry) (Rev, error) {
	ctx = callerctx.Of(ctx)
	return s.guarded(ctx, "put", key, base, hist, &rec)
}

// AppendHistory appends e to key's history, guarded by base like Put, and
// leaves the record as it is: its revision does not change, so no job's
// base is superseded by a refusal being recorded. The guard makes every
// entry true of the record it follows: a refusal decided on a record that
// has changed since is a *ConflictError, to be decided again. It returns
// the record's revision, unchanged. An append that finds an entry equal
// to e among the key's newest (the same append sent again, a hedge's
// other try) is that append: it lands nothing, whenever it takes its
// guess of the slot.
func (s *Store) AppendHistory(ctx context.Context, key string, base Rev, e HistoryEntry) (Rev, error) {
	ctx = callerctx.Of(ctx)
	rev, err := s.guarded(ctx, "append history", key, base, e, nil)
	if err == nil {
		rev = base // the transaction's revision is the entry's, not the record's
	}
	return rev, err
}

// trim deletes the history entry that the one at seq pushes out of the
// ring: the entry HistoryLimit slots below it. Every HistoryLimit-th write
// sweeps everything below that instead, for what a single slot misses
// (the gaps of a history brought in by Create).
//
// Not a sweep on every write: etcd's index keeps each deleted key as a
// tombstone until it compacts, and a delete ranging over them visits them
// all, so that each promotion of a busy key would cost more than the last
// (BenchmarkPutOnABusyKey).
func (s *Store) trim(key string, seq uint64) clientv3.Op {
	out := seq - HistoryLimit
	if seq%HistoryLimit != 0 {
		return clientv3.OpDelete(s.historyKey(key, out))
	}
	return clientv3.OpDelete(s.historyKey(key, 0), clientv3.WithRange(s.historyKey(key, out+1)))
}

// maxSlotTries bounds the retries of a write whose history slot another
// writer took: each retry is a transaction that lost only to an append on
// the same record, which is rare and quick.
const maxSlotTries = 16

// guarded runs one write: compare the record's mod revision with base and
// claim the slot above the key's newest history entry; then put rec (nil:
// the record stays as it is), put the entry and trim the history. Only the slot can be lost while the
// record still matches; then the write is retried above the newest entry
// the losing transaction read.
func (s *Store) guarded(ctx context.Context, op, key string, base Rev, hist HistoryEntry, rec *Record) (Rev, error) {
	c, cancel, err := s.begin(ctx, op, key)
	if err != nil {
		return 0, err
	}
	defer cancel()
	if err := faults.At(faults.EtcdWriteBeforeGuess); err != nil {
		return 0, err
	}
	rk := s.recordKey(key)
	seq, ok := s.cachedSeq(key)
	if rec == nil {
		// An append's guess is taken from the key's state, and the entry
		// is looked for in it: a try of the same append sent again (a
		// hedge) may take its guess after its sibling landed, from the
		// slot that sibling's answer left in the cache or from a read,
		// and its slot compare, above that entry, would pass. A stale
		// read only costs a retry: the compare fails, and the state it
		// reads back is looked through as well. A record moved on, or a
		// state that does not decode, is left to the compare, which says
		// so as it always has.
		resp, err := s.cli.Txn(c).Then(s.stateOps(key, clientv3.WithSerializable())...).Commit()
		if err != nil {
			return 0, s.cfg.opErr(ctx, op, key, err)
		}
		if cur, perr := parseState(key, s.historyDir(key), resp.Header.Revision, resp.Responses); perr == nil && cur.Rev == base {
			if Holds(cur.History, hist) {
				return Rev(resp.Header.Revision), nil
			}
			seq, ok = newestSeq(cur.History), true
		}
	}
	if !ok {
		// The last slot in use, from the member this client talks to: a
		// serializable read needs no consensus, and a stale answer only
		// costs a retry, because the slot is claimed by compare.
		last, err := s.cli.Get(c, s.historyDir(key), clientv3.WithPrefix(), clientv3.WithKeysOnly(),
			clientv3.WithSort(clientv3.SortByKey, clientv3.SortDescend), clientv3.WithLimit(1), clientv3.WithSerializable())
		if err != nil {
			return 0, s.cfg.opErr(ctx, op, key, err)
		}
		if len(last.Kvs) > 0 {
			seq, _ = parseSeq(string(last.Kvs[0].Key[len(s.historyDir(key)):]))
		}
	}
	if err := faults.At(faults.EtcdWriteAfterGuess); err != nil {
		return 0, err
	}
	for range maxSlotTries {
		hist.Seq = seq + 1
		// The last slot holds no entry (parseSeq), so an entry at the one
		// below it is the last a key takes. The transaction then writes
		// nothing and only proves the entry is there and the newest (a
		// guess may be stale); a write there committed, and every Get
		// and write of the key after it was ErrDamaged.
		full := LastSlot(seq)
		hk := s.historyKey(key, hist.Seq)
		var then []clientv3.Op
		if !full {
			hval, err := encodeHistory(hist)
			if err != nil {
				return 0, fmt.Errorf("%s %s: %w", op, key, err)
			}
			if rec != nil {
				rval, err := encodeRecord(*rec, hist.Seq)
				if err != nil {
					return 0, fmt.Errorf("%s %s: %w", op, key, err)
				}
				then = append(then, clientv3.OpPut(rk, string(rval)))
			}
			then = append(then, clientv3.OpPut(hk, string(hval)))
			if hist.Seq > HistoryLimit {
				then = append(then, s.trim(key, hist.Seq))
			}
		}
		// The slot is claimed only if no entry holds it or any slot above:
		// a guess far behind (a ring of appends by others since, whose
		// trims freed the slot after it) would otherwise land below the
		// newest entries, outside the ring Get reads.
		cmps := []clientv3.Cmp{
			clientv3.Compare(clientv3.ModRevision(rk), "=", int64(base)),
			clientv3.Compare(clientv3.CreateRevision(hk), "=", 0).WithRange(clientv3.GetPrefixRangeEnd(s.historyDir(key))),
		}
		if seq > 0 {
			// Nor above the newest entry: a guess from the key's earlier
			// life (deleted by another host's reap, then promoted anew)
			// is above every entry of its new one; a write there left a
			// gap, and at a sweep's slot its trim deleted them all.
			cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(s.historyKey(key, seq)), ">", 0))
		}
		tc, sends := withSends(c)
		resp, err := s.cli.Txn(tc).If(cmps...).Then(then...).Else(s.stateOps(key)...).Commit()
		if err != nil {
			return 0, s.cfg.opErr(ctx, op, key, err)
		}
		if resp.Succeeded && full {
			// The compare held the record absent: check --repair numbers
			// no history without a record, and leaves this one for etcdctl.
			settle := "check --repair numbers the key's history again"
			if base == 0 {
				settle = "the key has no record, and check --repair leaves a history without one: remove it with etcdctl del --prefix, as check names it"
			}
			return 0, fmt.Errorf("%s %s: %w: history entry %016x is in the last slot an entry takes, and no entry can follow it (%s)", op, key, ErrDamaged, seq, settle)
		}
		if resp.Succeeded {
			s.rememberSeq(key, hist.Seq)
			return Rev(resp.Header.Revision), faults.At(faults.EtcdWriteAfterCommit)
		}
		cur, perr := parseState(key, s.historyDir(key), resp.Header.Revision, resp.Responses)
		seq = newestSeq(cur.History)
		if perr == nil {
			s.rememberSeq(key, seq)
		}
		if cur.Rev != base {
			return 0, &ConflictError{Op: op, Key: key, Base: base, Current: cur, Resent: sends.Load() > 1}
		}
		if perr != nil {
			return 0, perr
		}
		if rec == nil && Holds(cur.History, hist) {
			// The slot went to this very entry: the same append sent
			// again (a hedged refusal's tries race on one guess), landed.
			return Rev(resp.Header.Revision), nil
		}
	}
	return 0, fmt.Errorf("%s %s: %w: the history slot was taken %d times in a row", op, key, ErrUnavailable, maxSlotTries)
}

// Holds reports whether h holds e, whatever its slot: a write of e sent
// more than once (a hedge's other try, a try whose answer was lost)
// landed. An entry carries its time to the nanosecond, its job and
// ticket, so an equal one is the same write. (Not whether a refusal like
// e is recorded, which store.RefusalRecorded decides before one is made.)
func Holds(h []HistoryEntry, e HistoryEntry) bool {
	e.Seq = 0
	for _, x := range h {
		if x.Seq = 0; x == e {
			return true
		}
	}
	return false
}

// Delete removes key's record and its whole history in one transaction
// guarded by base (0: only if the key has no record, which removes a
// history left without one). A lost compare is a *ConflictError; one with
// no record and Resent may be this delete's own, which leaves no trace
// to tell it by. It returns the revision of the deletion.
func (s *Store) Delete(ctx context.Context, key string, base Rev) (Rev, error) {
	ctx = callerctx.Of(ctx)
	c, cancel, err := s.begin(ctx, "delete", key)
	if err != nil {
		return 0, err
	}
	defer cancel()
	rk := s.recordKey(key)
	c, sends := withSends(c)
	resp, err := s.cli.Txn(c).If(clientv3.Compare(clientv3.ModRevision(rk), "=", int64(base))).
		Then(clientv3.OpDelete(rk), clientv3.OpDelete(s.historyDir(key), clientv3.WithPrefix())).
		Else(s.stateOps(key)...).Commit()
	if err != nil {
		return 0, s.cfg.opErr(ctx, "delete", key, err)
	}
	if !resp.Succeeded {
		cur, _ := parseState(key, s.historyDir(key), resp.Header.Revision, resp.Responses)
		return 0, &ConflictError{Op: "delete", Key: key, Base: base, Current: cur, Resent: sends.Load() > 1}
	}
	s.rememberSeq(key, 0) // the history went with the record
	return Rev(resp.Header.Revision), nil
}

// Item is one record of a List walk. Err is ErrDamaged, ErrNewerSchema or
// ErrInvalidKey (a name under the records that is no key) for a record
// that could not be read; the walk goes on past it.
type Item struct {
	Key    string // the key, or the name found under the records for ErrInvalidKey
	Rev    Rev    // the record's mod revision
	Record Record // the zero Record when Err is set
	Err    error  // why the record could not be read; nil otherwise
}

// listPageSize is how many records one List read asks for at most:
// ~300 bytes each. Tests make it smaller.
var listPageSize int64 = 500

// listPageBytes bounds the bytes of one List read's answer. etcd pages by
// count, not by bytes, and takes a record of up to its request limit
// (1.5 MiB by default): 500 such records made one answer of 700 MB, held
// twice over (gRPC's buffer and the decoded copy) before the first was
// passed on. A read's answer over the bound is refused by gRPC at its
// header, before its bytes are held, and read again as a smaller page.
// Tests make it smaller.
var listPageBytes = 4 << 20

// listFirstPage is how many records a List's first read asks for. etcd
// builds a read's whole answer before gRPC can refuse it for its bytes:
// a first page of listPageSize records as large as etcd takes (1.5 MiB at
// its default request limit) was up to 750 MB of the member's memory,
// and 100 records of 1.4 MB raised etcd 3.4's peak RSS by 200-430 MB for
// each walk, to be refused. Two such records fit listPageBytes; the pages
// after grow twice over each while the records are small: a dump of
// 2,004 small records made 12 range requests, not 6, one of 20,000 made
// 51, not 44 (the history names' pages included).
var listFirstPage int64 = 2

// List calls fn for every record, in key order, a page at a time (no
// history is read). Every page is read at the revision of the first, so
// the walk is one snapshot, unless etcd compacted that revision meanwhile:
// the walk then goes on at the newest revision. A page is at most
// listPageSize records and listPageBytes of answer, or a single record
// larger than that: the walk holds about that much at a time, however
// large and many the records (a page of large records makes the next
// ones smaller; one of small records lets them grow back). The first
// page is of listFirstPage records: neither etcd nor the walk builds a
// page of many large records before its size is known. It stops at
// the first error fn returns and returns it. Each page is bounded by the
// request timeout. A nil fn is ErrInvalidArgument.
func (s *Store) List(ctx context.Context, fn func(Item) error) error {
	return s.ListCounted(ctx, nil, fn)
}

// ListCounted is List that first gives counted the number of records the
// walk's snapshot holds: the count etcd sends with the first page (no
// read more), before fn is called. It is not called where the first page
// is not read. A walk that went on at the newest revision (compaction)
// may then pass fn more or fewer. A nil counted is List.
func (s *Store) ListCounted(ctx context.Context, counted func(records int64), fn func(Item) error) error {
	ctx = callerctx.Of(ctx)
	if fn == nil {
		return fmt.Errorf("list: no function to call: %w", ErrInvalidArgument)
	}
	if s.closed.Load() {
		return fmt.Errorf("list: %w", ErrClosed)
	}
	dir := s.recordDir()
	return s.walkRange(ctx, dir, listPageSize, false, counted, func(kvs []*mvccpb.KeyValue) (string, error) {
		for _, kv := range kvs {
			if err := fn(listItem(dir, kv)); err != nil {
				return "", err
			}
		}
		return "", nil
	})
}

// HistoryKeys calls fn with the name of every key that has a history, in
// key order, once each: the first segment of each key under the history
// prefix (a name that is no key included, as List includes one; such a
// name may be passed again where another sorts among its keys, "a", "a!",
// "a/…"). It reads
// keys only, no entry's value, and skips the rest of a key's history once
// it met the key: pages of up to ten times List's count, bounded by bytes
// as List's are, each a read bounded by the request timeout, all at the
// first page's revision (compaction as in List). It stops at the first
// error fn returns and returns it. A nil fn is ErrInvalidArgument.
//
// A key's history without its record is none of this package's writes
// (Put writes both, Delete removes both, AppendHistory and
// RenumberHistory are guarded by the record, Create by its absence): a
// record removed alone (etcdctl del), or another binary's.
func (s *Store) HistoryKeys(ctx context.Context, fn func(name string) error) error {
	if fn == nil {
		return fmt.Errorf("history keys: no function to call: %w", ErrInvalidArgument)
	}
	return s.HistoryNames(ctx, func(name string, _ bool) error { return fn(name) })
}

// HistoryNames is HistoryKeys, telling fn too whether the name's first
// key is the bare one, "<prefix>/history/<name>" with no entry's "/"
// (BareHistoryKey): none of this package's writes, put by hand or by
// another tool. Every read of a key's history is of "<name>/…", so no
// read finds it, and no removal of a history (Delete, etcdctl del
// --prefix of the history's dir) removes it. A bare key sorts before its
// name's entries, so the first call for a name says whether it has one.
func (s *Store) HistoryNames(ctx context.Context, fn func(name string, bare bool) error) error {
	ctx = callerctx.Of(ctx)
	if fn == nil {
		return fmt.Errorf("history keys: no function to call: %w", ErrInvalidArgument)
	}
	if s.closed.Load() {
		return fmt.Errorf("history keys: %w", ErrClosed)
	}
	dir := s.cfg.Prefix + "/history/"
	// met: a name was met, last (the empty name is one: no key's, named
	// as every such name is). Kept across pages: a page that ends at a
	// name's bare key ("<prefix>/history/<key>", put by hand) is followed
	// by one that begins with that name's entries, the same name, which
	// is not named again.
	last, met := "", false
	return s.walkRange(ctx, dir, 10*listPageSize, true, nil, func(kvs []*mvccpb.KeyValue) (string, error) {
		for _, kv := range kvs {
			name, _, entry := strings.Cut(string(kv.Key[len(dir):]), "/")
			if met && name == last {
				continue
			}
			last, met = name, true
			if err := fn(name, !entry); err != nil {
				return "", err
			}
		}
		if len(kvs) == 0 || !strings.HasPrefix(string(kvs[len(kvs)-1].Key), dir+last+"/") {
			return "", nil
		}
		// Past the last key's whole history: its other entries name no
		// key more.
		return clientv3.GetPrefixRangeEnd(dir + last + "/"), nil
	})
}

// walkRange reads the keys under dir a page at a time, for List and
// HistoryKeys: at most `most` keys a page and listPageBytes of answer (a
// single key larger than that alone), every page at the first one's
// revision unless etcd compacted it meanwhile (the walk then goes on at
// the newest). page is given each page's keys and returns where the next
// page starts ("": right after its last key), or an error that stops the
// walk. counted, when not nil, is given the first page's count of the
// keys under dir, once, before page is called.
//
// etcd counts every key from a read's start to its end, whatever the
// read's limit (3.4 and 3.7 alike: the count it answers with), so pages
// that each ran to dir's end counted the keys after them once for each
// page: the square of the keys over the walk (10,000 keys of 64 history
// entries: 41 M keys counted for HistoryKeys' 128 pages). The walk's
// range is cut in shards instead (see shard), each read running to its
// shard's end: once a read finds more than cutPages pages' worth of keys
// left in its shard, the rest of the shard is read as the shards of one
// more hex digit. The walk reads from where it is to the end of the
// shard it is in, and moves on past keys read alone, or past a shard read
// to its end: each key once, in key order, all at one revision, whatever
// the shards.
func (s *Store) walkRange(ctx context.Context, dir string, most int64, keysOnly bool, counted func(int64), page func([]*mvccpb.KeyValue) (string, error)) error {
	from := dir
	// shards is a stack: the shard read is the last, the ones after it
	// in key order before it.
	shards := []shard{{end: clientv3.GetPrefixRangeEnd(dir), cut: true}}
	var at int64
	limit, bound := most, listPageBytes
	if !keysOnly {
		limit = min(most, listFirstPage) // no page of values built before their size is known
	}
	for len(shards) > 0 {
		sh := shards[len(shards)-1]
		if from >= sh.end {
			shards = shards[:len(shards)-1]
			continue
		}
		resp, err := s.listPage(ctx, from, sh.end, at, limit, bound, keysOnly)
		var big *pageTooLarge
		switch {
		case errors.Is(err, errCompacted):
			at = 0
			continue
		case errors.As(err, &big) && limit == 1:
			// One key larger than the bound: read alone, whole.
			bound = 0
			continue
		case errors.As(err, &big):
			// The refused answer held limit keys, or as many as are
			// left: counted (no value read), so that a page of the
			// last few large records is not taken for many smaller
			// ones and refused again.
			held := limit
			if n, cerr := s.listCount(ctx, from, sh.end, at); cerr == nil && n > 0 {
				held = min(held, n)
			}
			limit = smallerPage(limit, held, big.size, int64(bound))
			continue
		case err != nil:
			return err
		}
		if at == 0 {
			at = resp.Header.Revision
		}
		if counted != nil {
			counted(resp.Count)
			counted = nil
		}
		var largest int64
		for _, kv := range resp.Kvs {
			largest = max(largest, int64(len(kv.Key)+len(kv.Value)))
		}
		next, err := page(resp.Kvs)
		if err != nil {
			return err
		}
		if !resp.More || len(resp.Kvs) == 0 {
			// The shard is read to its end.
			shards = shards[:len(shards)-1]
			from = max(from, next, sh.end)
			continue
		}
		if next == "" {
			next = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
		}
		from = next
		if left := resp.Count - int64(len(resp.Kvs)); left > cutPages*most && sh.cut {
			shards = append(shards[:len(shards)-1], sh.cuts(dir)...)
		}
		// The next page holds keys of this one's largest at most within
		// the bound, and grows no more than twice over: a run of small
		// records after large ones is not met with a page that large
		// records further on would overflow at once.
		bound = listPageBytes
		limit = min(most, 2*limit, max(1, int64(bound)/max(1, 2*largest)))
	}
	return nil
}

// cutPages is how many pages' worth of keys a walk's read may find left
// in its shard before the rest is read in shards of one more hex digit:
// the keys one shard's pages count again are at most about that many
// pages over, and a cut costs sixteen reads more. Tests make it smaller.
var cutPages int64 = 4

// shard is a part of a walk's range: the keys from where the walk is to
// end. One that may be cut holds the keys that start with dir+pre (a
// string of hex digits) and are not read yet, and is cut in seventeen:
// the keys before dir+pre+"0" (pre's own name, and pre followed by a
// character below '0'; not cut again), then for each hex digit h those
// from dir+pre+h to the next digit's, the last ("f") to end. No boundary
// parts a name's entries ("<name>/…"): each is dir and hex digits.
type shard struct {
	end string
	pre string
	cut bool // it may be cut: its keys are dir+pre's
}

const hexDigits = "0123456789abcdef"

// cuts is sh cut by one more hex digit, the last in key order first (the
// walk's stack reads its last).
func (sh shard) cuts(dir string) []shard {
	out := make([]shard, 0, len(hexDigits)+1)
	end := sh.end
	for i := len(hexDigits) - 1; i >= 0; i-- {
		pre := sh.pre + hexDigits[i:i+1]
		out = append(out, shard{end: end, pre: pre, cut: true})
		end = dir + pre
	}
	return append(out, shard{end: end, pre: sh.pre})
}

// smallerPage is the count of records to ask for after a page of limit
// records, held of them in its answer, whose answer of size bytes (0:
// not known) was over bound: as many of those records' mean size as fill
// half the bound, or an eighth of limit where the size is not known;
// always fewer than limit.
func smallerPage(limit, held, size, bound int64) int64 {
	n := limit / 8
	if size > 0 {
		n = held * bound / (2 * size)
	}
	return max(1, min(n, limit-1))
}

// listCount counts the records from from to end at revision at (0: the
// newest), reading no value.
func (s *Store) listCount(ctx context.Context, from, end string, at int64) (int64, error) {
	c, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithCountOnly()}
	if at != 0 {
		opts = append(opts, clientv3.WithRev(at))
	}
	resp, err := hedged(s, c, func(c context.Context) (*clientv3.GetResponse, error) {
		return s.cli.Get(c, from, opts...)
	})
	if err != nil {
		return 0, err
	}
	return resp.Count, nil
}

var errCompacted = errors.New("compacted")

// pageTooLarge is a List read whose answer was over its bound: gRPC
// refused it at its header, with its size (0: not known).
type pageTooLarge struct{ size int64 }

func (e *pageTooLarge) Error() string {
	return fmt.Sprintf("list: a page of %d bytes, over its bound", e.size)
}

// recvBoundKey is the context key of a read's bound on its answer's
// bytes (boundRecv).
type recvBoundKey struct{}

// recvBound is one read's bound on its answer: bytes, and the size of an
// answer gRPC refused for it (0: none refused; -1: one of a size not
// known).
type recvBound struct {
	bytes   int
	refused atomic.Int64
}

// boundRecv is a unary interceptor: a request whose context carries a
// *recvBound has its answer refused by gRPC past the bound, at the
// answer's header, before its bytes are read; the refusal's size is kept
// in the bound.
func boundRecv(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	b, ok := ctx.Value(recvBoundKey{}).(*recvBound)
	if !ok {
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	err := invoker(ctx, method, req, reply, cc, append(opts, grpc.MaxCallRecvMsgSize(b.bytes))...)
	const refusal = "grpc: received message larger than max"
	if st, isStatus := status.FromError(err); isStatus && st.Code() == codes.ResourceExhausted && strings.HasPrefix(st.Message(), refusal) {
		var size, bound int64
		if _, serr := fmt.Sscanf(st.Message(), refusal+" (%d vs. %d)", &size, &bound); serr != nil || size <= 0 {
			size = -1 // refused, of a size not known
		}
		b.refused.Store(size)
	}
	return err
}

func (s *Store) listPage(ctx context.Context, from, end string, at, limit int64, bound int, keysOnly bool) (*clientv3.GetResponse, error) {
	c, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	s.reconnect(c)
	opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(limit)}
	if at != 0 {
		opts = append(opts, clientv3.WithRev(at))
	}
	if keysOnly {
		opts = append(opts, clientv3.WithKeysOnly())
	}
	rb := &recvBound{bytes: bound}
	if bound > 0 {
		c = context.WithValue(c, recvBoundKey{}, rb)
	}
	resp, err := hedged(s, c, func(c context.Context) (*clientv3.GetResponse, error) {
		return s.cli.Get(c, from, opts...)
	})
	if err != nil {
		if size := rb.refused.Load(); size != 0 {
			return nil, &pageTooLarge{size: max(size, 0)}
		}
		if at != 0 && errors.Is(err, rpctypes.ErrCompacted) {
			return nil, errCompacted
		}
		return nil, s.cfg.opErr(ctx, "list", s.cfg.Prefix, err)
	}
	return resp, nil
}

func listItem(dir string, kv *mvccpb.KeyValue) Item {
	it := Item{Key: string(kv.Key[len(dir):]), Rev: Rev(kv.ModRevision)}
	if !ValidKey(it.Key) {
		it.Err = fmt.Errorf("list %q: %w", it.Key, ErrInvalidKey)
		return it
	}
	rec, err := decodeRecord(kv.Value)
	if err != nil {
		it.Err = fmt.Errorf("list %s: %w", it.Key, err)
	}
	it.Record = rec
	return it
}

// Backoff waits before try+1 of a request etcd did not answer (25 ms,
// doubling up to 400 ms), at most until ctx ends; it reports whether
// there is time for another try. Every retry of the fleet's, within one
// request timeout, is paced by it. ctx's deadline is read, not only its
// end: a context is ended by a timer of its own, which on a loaded
// machine runs late, and a pause that ended past the deadline before
// that timer ran was taken for time left (a lock tried again past its
// bound, the whole pause waited though the caller had 20 ms). That
// includes the deadline of a caller's context the store holds to Go's
// contract (callerctx.Of), whose Deadline reports none.
func Backoff(ctx context.Context, try int) bool {
	ctx = callerctx.Of(ctx)
	pause := backoffPause(try)
	deadline, bounded := callerctx.Deadline(ctx)
	if bounded {
		pause = min(pause, time.Until(deadline))
	}
	t := time.NewTimer(pause)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return ctx.Err() == nil && (!bounded || time.Now().Before(deadline))
	}
}

// backoffPause is Backoff's wait before try+1. The shift is capped before
// it is made, not after: 25 ms shifted by 39 or more overflows, to a
// negative pause or (from 58 on) none, and a request timeout long enough
// for that many tries would then send them to an etcd that does not
// answer with no pause at all. A negative try, which no loop passes, is
// the first.
func backoffPause(try int) time.Duration {
	return 25 * time.Millisecond << min(max(try, 0), 4)
}
