package etcdtest

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeT records what PaceAttempts says of a test.
type fakeT struct {
	mu       sync.Mutex
	errors   []string
	logs     []string
	cleanups []func()
}

func (f *fakeT) Helper() {}
func (f *fakeT) Logf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.logs = append(f.logs, fmt.Sprintf(format, args...))
}
func (f *fakeT) Error(args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errors = append(f.errors, fmt.Sprint(args...))
}
func (f *fakeT) Cleanup(c func()) { f.cleanups = append(f.cleanups, c) }

func (f *fakeT) cleanup() {
	for _, c := range slices.Backward(f.cleanups) {
		c()
	}
}

// A failed attempt is run again only while the machine fell behind the
// pace its timeout was set for (a round beside it took more than a fifth
// of the timeout), at most three attempts in all, each with a timeout
// paced by the slowest round beside the one before; one that failed with
// the machine keeping pace fails the test at once, and an attempt that
// passes ends it. The rounds are stand-ins that take the time a case
// gives them: nothing here waits on a cluster.
func TestPaceAttemptsRunAgainOnlyWhereTheMachineFellBehind(t *testing.T) {
	const floor = 50 * time.Millisecond
	for _, c := range []struct {
		name string
		// slow: the round beside attempt i (1-based) takes this long
		// once the attempt has begun; fail: attempt i fails.
		slow     map[int]time.Duration
		fail     map[int]bool
		attempts int
		failed   bool
	}{
		{name: "passes at once", attempts: 1},
		{name: "fails keeping pace", fail: map[int]bool{1: true}, attempts: 1, failed: true},
		{name: "fails behind, then passes", slow: map[int]time.Duration{1: 30 * time.Millisecond}, fail: map[int]bool{1: true}, attempts: 2},
		{name: "fails behind, then keeping pace", slow: map[int]time.Duration{1: 30 * time.Millisecond}, fail: map[int]bool{1: true, 2: true}, attempts: 2, failed: true},
		{name: "fails behind three times", slow: map[int]time.Duration{1: 30 * time.Millisecond, 2: 80 * time.Millisecond, 3: time.Second}, fail: map[int]bool{1: true, 2: true, 3: true}, attempts: 3, failed: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			ft := &fakeT{}
			var timeouts []time.Duration
			attempt := 0
			paceAttempts(ft, floor, func(p *Pace) {
				attempt++
				var mu sync.Mutex
				began := false
				beside := make(chan struct{}, 1) // a round beside the attempt ran
				timeouts = append(timeouts, p.Timeout(func() time.Duration {
					mu.Lock()
					defer mu.Unlock()
					if began {
						select {
						case beside <- struct{}{}:
						default:
						}
						return c.slow[attempt]
					}
					return time.Millisecond
				}))
				mu.Lock()
				began = true
				mu.Unlock()
				<-beside
				if c.fail[attempt] {
					p.Errorf("attempt %d failed", attempt)
				}
			})
			ft.cleanup()
			if attempt != c.attempts {
				t.Errorf("%d attempts run, want %d; logs %q", attempt, c.attempts, ft.logs)
			}
			if failed := len(ft.errors) > 0; failed != c.failed {
				t.Errorf("the test failed: %v, want %v; errors %q, logs %q", failed, c.failed, ft.errors, ft.logs)
			}
			if c.failed && (len(ft.errors) != 1 || !strings.Contains(ft.errors[0], fmt.Sprintf("attempt %d failed", c.attempts))) {
				t.Errorf("errors %q; want the last attempt's alone", ft.errors)
			}
			// The first at the floor; each one after it five times the
			// slowest round beside the one before, at most MaxPaced.
			want := []time.Duration{floor}
			for i := 1; i < attempt; i++ {
				want = append(want, min(MaxPaced, max(floor, 5*c.slow[i])))
			}
			if !slices.Equal(timeouts, want) {
				t.Errorf("the attempts' timeouts %v, want %v", timeouts, want)
			}
		})
	}
}

// An attempt's timeout is five times the slowest of the three rounds
// before it where that is above the floor, and no more than MaxPaced; a
// round's time in Quiet is not one the rounds beside the attempt count.
func TestPaceTimeoutIsFiveRoundsCappedAndQuietIsNotCounted(t *testing.T) {
	for _, c := range []struct {
		round, want time.Duration
	}{
		{time.Millisecond, time.Second},
		{300 * time.Millisecond, 1500 * time.Millisecond},
		{3 * time.Second, MaxPaced},
	} {
		ft := &fakeT{}
		p := &Pace{t: ft, floor: time.Second}
		n := 0
		got := p.Timeout(func() time.Duration {
			n++
			if n > 3 {
				return 0
			}
			return c.round
		})
		ft.cleanup()
		if got != c.want || p.Slowest() != c.round {
			t.Errorf("rounds of %v: timeout %v, the slowest round %v; want %v and %v", c.round, got, p.Slowest(), c.want, c.round)
		}
	}
	ft := &fakeT{}
	p := &Pace{t: ft, floor: time.Second}
	var mu sync.Mutex
	inQuiet := false
	p.Timeout(func() time.Duration {
		mu.Lock()
		defer mu.Unlock()
		if inQuiet {
			return time.Hour // a round run over Quiet's f
		}
		return time.Millisecond
	})
	p.Quiet(func() {
		mu.Lock()
		inQuiet = true
		mu.Unlock()
		time.Sleep(300 * time.Millisecond) // rounds are due every 100 ms
		mu.Lock()
		inQuiet = false
		mu.Unlock()
	})
	if during := p.End(); during >= time.Hour {
		t.Errorf("a round ran while Quiet's f did: the slowest round beside the attempt %v", during)
	}
	ft.cleanup()
}
