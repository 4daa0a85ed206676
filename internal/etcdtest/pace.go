package etcdtest

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// Pace is one attempt of a test whose request timeout is paced by the
// machine and whose failure is judged against the pace the machine kept
// while it ran (PaceAttempts): the fleet's tests of one silent member of
// three, and others whose requests must be answered within a share of a
// timeout by members that answer.
//
// A request whose first try meets a silent member is answered by a try
// sent again at a third of the timeout, which the members that answer
// must answer within the two thirds left; at a load of 15 to 27 on two
// cores they took longer than the 400 ms a 600 ms timeout left them,
// which measures the machine, not the hedge. So an attempt's timeout is
// at least five times the slowest of three rounds (Timeout's round: a
// lock taken and released and a read, every member answering, each more
// requests, four of them raft writes, than one request a try sends). One
// measure before the fault bounded no load that came after it (the
// fleet's NoWalk and NoRenumber failed once each at a load of about 18),
// so the rounds go on, one every 100 ms, while the attempt runs. An
// attempt that failed while a round took longer than a fifth of its
// timeout (the machine slower than the timeout was paced for) is run
// again, on a fleet of its own, its timeout paced by that round; one
// that failed while the machine kept its pace fails the test, and so
// does the third.
//
// The timeout is at most MaxPaced, under gRPC's keepalive (10 s, and the
// ping's wait): without the hedge a request that meets the silent member
// waits out the timeout and fails; with a timeout past the keepalive its
// connection would be closed first and a read sent again by etcd's
// client, and the test would no longer see the defect. On an idle
// machine a round takes some tens of milliseconds and the floor stands.
type Pace struct {
	t       paceT
	floor   time.Duration
	timeout time.Duration
	slowest time.Duration // of the rounds before the attempt

	mu   sync.Mutex // guards errs
	errs []string

	quiet  sync.Mutex // held by a round beside the attempt, and by Quiet
	stop   chan struct{}
	ended  chan time.Duration
	during time.Duration
	once   sync.Once
}

const (
	// MaxPaced bounds a paced timeout (see Pace).
	MaxPaced = 8 * time.Second
	// paceTries is how many attempts PaceAttempts runs at most.
	paceTries = 3
	// paceFactor is how many of the slowest round a paced timeout is.
	paceFactor = 5
)

// Timeout is the attempt's request timeout, paced by round (which times
// one round of requests, every member answering, an error counting as
// its time): p's floor, or five times the slowest of three rounds where
// that is more, at most MaxPaced. The rounds then go on beside the
// attempt, one every 100 ms, until End; End runs at the test's cleanup
// at the latest, before every cleanup registered before Timeout (so
// before the Store or Backend round uses is closed). Call it once.
func (p *Pace) Timeout(round func() time.Duration) time.Duration {
	p.t.Helper()
	var slowest time.Duration
	for range 3 {
		slowest = max(slowest, round())
	}
	p.slowest = slowest
	p.timeout = min(MaxPaced, max(p.floor, paceFactor*slowest))
	p.t.Logf("request timeout %v: the slowest of three rounds of a lock and a read, every member answering, took %v", p.timeout, slowest.Round(time.Millisecond))
	p.stop, p.ended = make(chan struct{}), make(chan time.Duration, 1)
	go func() {
		var slowest time.Duration
		for {
			select {
			case <-p.stop:
				p.ended <- slowest
				return
			case <-time.After(100 * time.Millisecond):
			}
			p.quiet.Lock()
			slowest = max(slowest, round())
			p.quiet.Unlock()
		}
	}()
	p.t.Cleanup(func() { p.End() })
	return p.timeout
}

// Slowest is the slowest of the three rounds Timeout timed before the
// attempt: for a bound of the test's own that the timeout does not give.
func (p *Pace) Slowest() time.Duration { return p.slowest }

// Quiet runs f with no round beside the attempt in flight and none
// started until f returns: for a fault that slows every request by
// design (a leader killed, an election), which is no measure of the
// machine.
func (p *Pace) Quiet(f func()) {
	p.quiet.Lock()
	defer p.quiet.Unlock()
	f()
}

// End stops the rounds beside the attempt (at once if they never began)
// and returns the slowest of them.
func (p *Pace) End() time.Duration {
	p.once.Do(func() {
		if p.stop != nil {
			close(p.stop)
			p.during = <-p.ended
		}
	})
	return p.during
}

// Errorf records a failure of the attempt. It is safe for concurrent use.
func (p *Pace) Errorf(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.errs = append(p.errs, fmt.Sprintf(format, args...))
}

// Failed says whether the attempt has recorded a failure.
func (p *Pace) Failed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.errs) > 0
}

// PaceAttempts runs attempt, which sets up its own cluster and takes its
// timeout from p.Timeout, until it passes, fails with the machine
// keeping its pace, or has failed three times; an attempt's failures go
// through p.Errorf (a t.Fatal ends the test at once). See Pace.
func PaceAttempts(t *testing.T, floor time.Duration, attempt func(p *Pace)) {
	t.Helper()
	paceAttempts(t, floor, attempt)
}

// paceT is what of a *testing.T a Pace uses.
type paceT interface {
	Helper()
	Logf(format string, args ...any)
	Error(args ...any)
	Cleanup(func())
}

func paceAttempts(t paceT, floor time.Duration, attempt func(p *Pace)) {
	t.Helper()
	for i := 1; ; i++ {
		p := &Pace{t: t, floor: floor}
		attempt(p)
		during := p.End()
		if !p.Failed() {
			if i > 1 {
				t.Logf("attempt %d passed, at a request timeout of %v", i, p.timeout)
			}
			return
		}
		slower := paceFactor*during > p.timeout
		if !slower || i == paceTries {
			for _, e := range p.errs {
				t.Error(e)
			}
			t.Logf("attempt %d of %d failed at a request timeout of %v, the slowest round beside it %v", i, paceTries, p.timeout, during.Round(time.Millisecond))
			return
		}
		for _, e := range p.errs {
			t.Logf("attempt %d: %s", i, e)
		}
		t.Logf("attempt %d failed at a request timeout of %v while a round took %v, the machine slower than the timeout was paced for: again, on a cluster of its own", i, p.timeout, during.Round(time.Millisecond))
		floor = min(MaxPaced, paceFactor*during)
	}
}
