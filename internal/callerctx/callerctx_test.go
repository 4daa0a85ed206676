package callerctx

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// doneNoErr's Done is done (closed by close) while its Err stays nil.
type doneNoErr struct {
	context.Context
	done chan struct{}
}

func (c doneNoErr) Done() <-chan struct{} { return c.done }
func (doneNoErr) Err() error              { return nil }

// A Done closed while Err is nil is context.Canceled, and a child made
// with context.WithTimeout, before the close and after it, ends with it
// rather than panicking (in the caller's goroutine, or in the one the
// standard library starts to watch the parent, where nothing recovers).
func TestADoneClosedWithANilErrIsCanceled(t *testing.T) {
	c := doneNoErr{context.Background(), make(chan struct{})}
	h := Of(c)
	if err := h.Err(); err != nil {
		t.Fatalf("Err before the close = %v, want nil", err)
	}
	early, cancel := context.WithTimeout(h, time.Hour)
	defer cancel()
	close(c.done)
	if err := h.Err(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Err after the close = %v, want context.Canceled", err)
	}
	select {
	case <-early.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("a child made before the close was not ended by it")
	}
	if err := early.Err(); !errors.Is(err, context.Canceled) {
		t.Fatalf("the child's Err = %v, want context.Canceled", err)
	}
	late, cancel := context.WithTimeout(h, time.Hour)
	defer cancel()
	if err := late.Err(); !errors.Is(err, context.Canceled) {
		t.Fatalf("a child made after the close: Err = %v, want context.Canceled", err)
	}
}

// flapping's Err is context.Canceled at its first look and nil after.
type flapping struct {
	context.Context
	looks *atomic.Int64
}

func (c flapping) Err() error {
	if c.looks.Add(1) == 1 {
		return context.Canceled
	}
	return nil
}

// An Err once non-nil stays the same error, as the contract has it.
func TestAnErrOnceSaidStays(t *testing.T) {
	h := Of(flapping{context.Background(), new(atomic.Int64)})
	for i := range 3 {
		if err := h.Err(); err != context.Canceled {
			t.Fatalf("look %d: Err = %v, want context.Canceled", i, err)
		}
	}
}

// lying names a deadline it never keeps.
type lying struct{ context.Context }

func (lying) Deadline() (time.Time, bool) { return time.Now().Add(-time.Hour), true }
func (lying) Done() <-chan struct{}       { return make(chan struct{}) }

// No deadline is reported, so that context.WithTimeout sets its own timer
// rather than trusting one that never fires.
func TestADeadlineIsNotTrusted(t *testing.T) {
	h := Of(lying{context.Background()})
	if _, ok := h.Deadline(); ok {
		t.Fatal("Deadline reported")
	}
	c, cancel := context.WithTimeout(h, 20*time.Millisecond)
	defer cancel()
	select {
	case <-c.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the request timeout never ended")
	}
	if h.Err() != nil {
		t.Fatalf("the caller's context, never done, says %v", h.Err())
	}
}

// panics panics in each method but Deadline.
type panics struct{ context.Context }

func (panics) Done() <-chan struct{} { panic("Done") }
func (panics) Err() error            { panic("Err") }
func (panics) Value(any) any         { panic("Value") }

// A panic in the caller's Err or Done is the call given up: an error that
// wraps context.Canceled and says the panic, a closed Done; a panic in
// Value is a nil value.
func TestAPanicIsACancel(t *testing.T) {
	h := Of(panics{context.Background()})
	if v := h.Value("k"); v != nil {
		t.Fatalf("Value = %v, want nil", v)
	}
	select {
	case <-h.Done():
	default:
		t.Fatal("Done not closed")
	}
	err := h.Err()
	if !errors.Is(err, context.Canceled) || err.Error() != "context canceled: the caller's context panicked in Done: Done" {
		t.Fatalf("Err = %v", err)
	}
	c, cancel := context.WithTimeout(h, time.Hour)
	defer cancel()
	if !errors.Is(c.Err(), context.Canceled) {
		t.Fatalf("a child's Err = %v", c.Err())
	}
}

// Of is nil-safe, leaves context.Background() as it is, and wraps once.
func TestOf(t *testing.T) {
	//lint:ignore SA1012 a nil ctx is what is tested
	if Of(nil) != context.Background() || Of(context.Background()) != context.Background() {
		t.Fatal("nil or Background wrapped")
	}
	c, cancel := context.WithCancel(context.Background())
	defer cancel()
	h := Of(c)
	if Of(h) != h {
		t.Fatal("wrapped twice")
	}
	cancel()
	if !errors.Is(h.Err(), context.Canceled) {
		t.Fatalf("Err after cancel = %v", h.Err())
	}
}

// Deadline reads the caller's deadline through a held context and the
// contexts made from it, the earlier of it and their own; a panic in the
// caller's Deadline is none.
func TestDeadlineReadsTheCallersThroughOf(t *testing.T) {
	soon := time.Now().Add(time.Minute)
	caller, cancel := context.WithDeadline(context.Background(), soon)
	defer cancel()
	h := Of(caller)
	req, cancelReq := context.WithTimeout(h, time.Hour)
	defer cancelReq()
	for what, c := range map[string]context.Context{"held": h, "a child": req} {
		if d, ok := Deadline(c); !ok || !d.Equal(soon) {
			t.Errorf("Deadline(%s) = %v, %v; want the caller's %v", what, d, ok, soon)
		}
	}
	shorter, cancelShorter := context.WithTimeout(h, time.Millisecond)
	defer cancelShorter()
	if d, ok := Deadline(shorter); !ok || !d.Before(soon) {
		t.Errorf("Deadline of a child with the earlier deadline = %v, %v; want its own", d, ok)
	}
	if _, ok := Deadline(Of(context.WithoutCancel(caller))); ok {
		t.Error("Deadline of a caller with none reported one")
	}
	if _, ok := Deadline(Of(deadlinePanics{context.Background()})); ok {
		t.Error("Deadline of a caller whose Deadline panics reported one")
	}
	if d, ok := Deadline(caller); !ok || !d.Equal(soon) {
		t.Errorf("Deadline of a context not held = %v, %v", d, ok)
	}
}

// deadlinePanics panics in Deadline.
type deadlinePanics struct{ context.Context }

func (deadlinePanics) Deadline() (time.Time, bool) { panic("Deadline") }

// Err and Done from many goroutines while the caller cancels: the answer
// kept is read and written under the mutex (-race).
func TestErrAndDoneFromManyGoroutines(t *testing.T) {
	for range 20 {
		c, cancel := context.WithCancel(context.Background())
		h := Of(c)
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 50 {
					<-h.Done()
					if h.Err() == nil {
						t.Error("Err nil after Done")
						return
					}
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				_ = h.Err()
			}
		}()
		cancel()
		wg.Wait()
	}
}

// The caller's own error is kept as it is: a deadline is
// context.DeadlineExceeded, not a cancel, and a cause stays the caller's.
func TestTheCallersErrIsItsOwn(t *testing.T) {
	past, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	if err := Of(past).Err(); err != context.DeadlineExceeded {
		t.Errorf("Err of a caller past its deadline = %v, want context.DeadlineExceeded", err)
	}
	why := errors.New("why")
	c, cancelCause := context.WithCancelCause(context.Background())
	h := Of(c)
	cancelCause(why)
	if h.Err() != context.Canceled || context.Cause(h) != why {
		t.Errorf("Err, Cause = %v, %v; want context.Canceled, the caller's cause", h.Err(), context.Cause(h))
	}
}

// onlyDonePanics keeps the contract but for a Done that panics.
type onlyDonePanics struct{ context.Context }

func (onlyDonePanics) Done() <-chan struct{} { panic("Done") }

// A Done that panics is the call given up when Err is asked first too (Err
// looks at Done where the caller's Err is nil).
func TestADonePanicSeenByErr(t *testing.T) {
	err := Of(onlyDonePanics{context.Background()}).Err()
	if !errors.Is(err, context.Canceled) || err.Error() != "context canceled: the caller's context panicked in Done: Done" {
		t.Fatalf("Err = %v", err)
	}
}

// errThenDonePanics says context.Canceled and panics in Done.
type errThenDonePanics struct{ context.Context }

func (errThenDonePanics) Err() error            { return context.Canceled }
func (errThenDonePanics) Done() <-chan struct{} { panic("Done") }

// An error once kept is not replaced by a panic met later.
func TestAnErrKeptIsNotReplacedByALaterPanic(t *testing.T) {
	h := Of(errThenDonePanics{context.Background()})
	if err := h.Err(); err != context.Canceled {
		t.Fatalf("Err = %v", err)
	}
	<-h.Done()
	if err := h.Err(); err != context.Canceled {
		t.Fatalf("Err after Done panicked = %v, want the context.Canceled kept", err)
	}
}

// distinct answers a new error at each look, slowly, so that looks made
// at once overlap.
type distinct struct {
	context.Context
	n *atomic.Int64
}

func (c distinct) Err() error {
	time.Sleep(time.Millisecond)
	return errors.New(string(rune('a' + c.n.Add(1)%26)))
}

// Callers asking at once all get the one error kept first.
func TestFirstLooksAtOnceAgree(t *testing.T) {
	for range 50 {
		h := Of(distinct{context.Background(), new(atomic.Int64)})
		var wg sync.WaitGroup
		start := make(chan struct{})
		got := make([]error, 4)
		for i := range got {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				got[i] = h.Err()
			}()
		}
		close(start)
		wg.Wait()
		for _, err := range got[1:] {
			if err != got[0] {
				t.Fatalf("looks at once got %v and %v", got[0], err)
			}
		}
	}
}

// A held context names the caller's type, as the standard ones name
// theirs (in an error or a log line that prints it).
func TestStringNamesTheCallersType(t *testing.T) {
	c, cancel := context.WithCancel(context.Background())
	defer cancel()
	if got := fmt.Sprint(Of(c)); got != "callerctx.Of(*context.cancelCtx)" {
		t.Errorf("String = %q", got)
	}
}

// A context made from a held one through WithoutCancel is detached from
// the caller's deadline as from its end: Deadline names the bound made
// under it alone, and none without one. Through context.WithoutCancel
// (Value reaches the held context), the caller's deadline was read.
func TestDeadlineDoesNotReadTheCallersThroughWithoutCancel(t *testing.T) {
	caller, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Hour))
	defer cancel()
	detached := WithoutCancel(Of(caller))
	if d, ok := Deadline(detached); ok {
		t.Errorf("Deadline(WithoutCancel(Of(ctx))) = %v; want none", d)
	}
	bound, stop := context.WithTimeout(detached, time.Hour)
	defer stop()
	want, _ := bound.Deadline()
	if d, ok := Deadline(bound); !ok || !d.Equal(want) {
		t.Errorf("Deadline of a timeout under WithoutCancel = %v, %v; want the timeout's %v", d, ok, want)
	}
	if detached.Err() != nil || detached.Done() != nil {
		t.Errorf("WithoutCancel: Err %v, Done %v; want neither", detached.Err(), detached.Done())
	}
}
