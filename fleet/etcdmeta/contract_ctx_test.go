package etcdmeta

import (
	"context"
	"errors"
	"testing"
	"time"

	"sessdb/internal/etcdtest"
	"sessdb/internal/hostilectx"
)

// The contexts that break Go's contract a caller may hand over.
type (
	closedNoErr = hostilectx.DoneNoErr
	errPanics   = hostilectx.ErrPanics
)

// etcdmeta is a package a Go caller imports, and its requests took the
// caller's ctx raw, where the fleet's entries hold it to Go's contract
// first (callerctx.Of). Given a context whose Done is closed while its
// Err is nil, each request panicked in context.WithTimeout ("context:
// internal error: missing cancel error"; in the goroutine it starts, out
// of any caller's reach, where Done closes during the call), and one
// whose Err panics panicked in it. Each is now held to the contract at
// its entry: the call ends with an error that wraps context.Canceled,
// Backoff with no time for another try, and nothing panics.
func TestRequestsTakeAContextThatBreaksTheContract(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	s := open(t, c)
	// A second endpoint that takes no connection: Hedge then hedges.
	several := open(t, c, func(cfg *Config) { cfg.Endpoints = append(cfg.Endpoints, "http://127.0.0.1:23849") })
	key := newKey()
	st, err := func() (State, error) {
		if _, err := s.Put(ctx(t), key, 0, record(key, 1), entry(1, randHex(16))); err != nil {
			return State{}, err
		}
		return s.GetRecord(ctx(t), key)
	}()
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []struct {
		name string
		ctx  context.Context
	}{{"Done closed, Err nil", closedNoErr{Context: context.Background()}}, {"Err panics", errPanics{Context: context.Background()}}} {
		b := bad.ctx
		for _, step := range []struct {
			name string
			run  func() error
		}{
			{"create", func() error { other := newKey(); _, err := s.Create(b, other, record(other, 1), nil); return err }},
			{"put", func() error { _, err := s.Put(b, newKey(), 0, record(key, 1), entry(1, randHex(16))); return err }},
			{"get", func() error { _, err := s.Get(b, key); return err }},
			{"get record", func() error { _, err := s.GetRecord(b, key); return err }},
			{"peek record", func() error { _, err := s.PeekRecord(b, key); return err }},
			{"append history", func() error { _, err := s.AppendHistory(b, key, st.Rev, entry(1, randHex(16))); return err }},
			{"delete", func() error { _, err := s.Delete(b, key, st.Rev); return err }},
			{"renumber", func() error { _, err := s.RenumberHistory(b, key, st.Rev); return err }},
			{"list", func() error { return s.List(b, func(Item) error { return nil }) }},
			{"list counted", func() error { return s.ListCounted(b, nil, func(Item) error { return nil }) }},
			{"history keys", func() error { return s.HistoryKeys(b, func(string) error { return nil }) }},
			{"lock", func() error {
				unlock, _, err := s.Lock(b, key)
				if err == nil {
					unlock()
				}
				return err
			}},
			{"fleet id", func() error { _, err := s.FleetID(b, true); return err }},
			{"has records", func() error { _, err := s.HasRecords(b); return err }},
			{"hedge", func() error {
				_, err := Hedge(several, b, func(c context.Context) (int, error) { return 0, c.Err() }, func(error) bool { return true }, nil)
				return err
			}},
		} {
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Errorf("%s, %s: panicked: %v", bad.name, step.name, p)
					}
				}()
				if err := step.run(); !errors.Is(err, context.Canceled) {
					t.Errorf("%s, %s: %v; want an error that wraps context.Canceled", bad.name, step.name, err)
				}
			}()
		}
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("%s, backoff: panicked: %v", bad.name, p)
				}
			}()
			if Backoff(b, 0) {
				t.Errorf("%s, backoff: time for another try after the caller gave up", bad.name)
			}
		}()
	}
	// Nothing was written: the key is as it was.
	if now, err := s.GetRecord(ctx(t), key); err != nil || now.Rev != st.Rev {
		t.Errorf("the key after the calls given up: rev %d, %v; want %d", now.Rev, err, st.Rev)
	}
}

// lyingDeadline names a deadline its Done does not keep: done only once
// done is closed, and then cancelled.
type lyingDeadline struct {
	context.Context
	at   time.Time
	done chan struct{}
}

func (c lyingDeadline) Deadline() (time.Time, bool) { return c.at, true }
func (c lyingDeadline) Done() <-chan struct{}       { return c.done }
func (c lyingDeadline) Err() error {
	select {
	case <-c.done:
		return context.Canceled
	default:
		return nil
	}
}

// A caller's deadline that its Done never keeps, given to a request: the
// request timeout was made with context.WithTimeout, which trusts an
// earlier parent deadline and sets no timer of its own, so against a
// member that takes the connection and answers nothing the request
// waited for ever (here, 5 s, when the test gave up on it). The request
// timeout bounds it now: ErrUnavailable after it.
func TestARequestGivenADeadlineThatLiesEndsAtTheRequestTimeout(t *testing.T) {
	l := listenHolding(t, nil)
	s, err := Open(Config{Endpoints: []string{"http://" + l.Addr().String()}, RequestTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	lying := lyingDeadline{context.Background(), time.Now().Add(50 * time.Millisecond), make(chan struct{})}
	defer close(lying.done) // lets a request still waiting go
	ended := make(chan error, 1)
	began := time.Now()
	go func() { _, err := s.GetRecord(lying, newKey()); ended <- err }()
	select {
	case err := <-ended:
		if !errors.Is(err, ErrUnavailable) {
			t.Fatalf("a request to a silent member given a lying deadline: %v after %v; want ErrUnavailable", err, time.Since(began))
		}
		t.Logf("ended after %v: %v", time.Since(began), err)
	case <-time.After(5 * time.Second):
		t.Fatal("a request to a silent member given a lying deadline still waits after 5 s; want it ended at the request timeout (300 ms)")
	}
}

// errPanicsOpen panics in Err while its Done stays open.
type errPanicsOpen struct{ context.Context }

func (errPanicsOpen) Err() error { panic("the caller's Err") }

// Backoff looks at its ctx's Err once the pause is over; a caller's whose
// Err panics while its Done stays open panicked there, and is now the
// call given up: no time for another try. The requests' test above never
// reached that look, its contexts' Done being closed (mutant M13).
func TestBackoffTakesAContextWhoseErrPanics(t *testing.T) {
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("Backoff panicked: %v", p)
		}
	}()
	if Backoff(errPanicsOpen{context.Background()}, 0) {
		t.Error("Backoff: time for another try after the caller's Err panicked")
	}
}

// A caller's context whose Err panics is its cancel (callerctx.Of: an
// error that wraps context.Canceled), and a request it ends is told as one
// a plain cancel ends is: Unanswered alike, so a write's caller asks
// again whether it landed rather than take it for one etcd refused. gRPC
// answers the held context's own error with code Unknown, which wraps
// nothing: opErr names the caller's cancel in it.
func TestARequestEndedByAPanickingErrIsToldAsAPlainCancel(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	s := open(t, c)
	key := newKey()
	if _, err := s.Put(ctx(t), key, 0, record(key, 1), entry(1, randHex(16))); err != nil {
		t.Fatal(err)
	}
	st, err := s.GetRecord(ctx(t), key)
	if err != nil {
		t.Fatal(err)
	}
	plain, cancel := context.WithCancel(context.Background())
	cancel()
	for _, step := range []struct {
		name string
		run  func(context.Context) error
	}{
		{"create", func(b context.Context) error {
			other := newKey()
			_, err := s.Create(b, other, record(other, 1), nil)
			return err
		}},
		{"put", func(b context.Context) error {
			_, err := s.Put(b, newKey(), 0, record(key, 1), entry(1, randHex(16)))
			return err
		}},
		{"get", func(b context.Context) error { _, err := s.Get(b, key); return err }},
		{"append history", func(b context.Context) error {
			_, err := s.AppendHistory(b, key, st.Rev, entry(1, randHex(16)))
			return err
		}},
		{"delete", func(b context.Context) error { _, err := s.Delete(b, key, st.Rev); return err }},
	} {
		want := step.run(plain)
		got := step.run(errPanics{Context: context.Background()})
		if !errors.Is(want, context.Canceled) || !errors.Is(got, context.Canceled) {
			t.Fatalf("%s: plain cancel %v, Err panics %v; want both to wrap context.Canceled", step.name, want, got)
		}
		if Unanswered(got) != Unanswered(want) {
			t.Errorf("%s: Err panics: %v, Unanswered %v; a plain cancel's is %v (%v)", step.name, got, Unanswered(got), Unanswered(want), want)
		}
	}
}
