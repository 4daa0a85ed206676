package migrate

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"sessdb/store"
)

// doneNoErr is a Context of a caller's own whose Done is closed while its
// Err stays nil: against Go's contract.
type doneNoErr struct {
	context.Context
	done chan struct{}
}

func (c doneNoErr) Done() <-chan struct{} { return c.done }
func (doneNoErr) Err() error              { return nil }

// ToDBContext and ToLegacyContext take a context whose Done is closed
// while its Err is nil as cancelled, as one the standard library
// cancelled: nothing panics, and the run stops as it stops then.
func TestMigrationsTakeAContextThatBreaksTheContract(t *testing.T) {
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, store.Key("github", "acme/widget", "1")), 0o700); err != nil {
		t.Fatal(err)
	}
	for name, run := range map[string]func(context.Context, string, Options, func(Report) error) (Summary, error){
		"to-db": ToDBContext, "to-legacy": ToLegacyContext,
	} {
		cancelled, cancel := context.WithCancel(context.Background())
		cancel()
		wantSum, want := run(cancelled, root, testOpts(), func(Report) error { return nil })
		odd := doneNoErr{context.Background(), make(chan struct{})}
		close(odd.done)
		var got error
		var sum Summary
		panicked := func() (p any) {
			defer func() { p = recover() }()
			sum, got = run(odd, root, testOpts(), func(Report) error { return nil })
			return nil
		}()
		if panicked != nil {
			t.Errorf("%s with Done closed and a nil Err: panicked: %v", name, panicked)
			continue
		}
		if (got == nil) != (want == nil) || errors.Is(got, context.Canceled) != errors.Is(want, context.Canceled) || sum.Interrupted != wantSum.Interrupted {
			t.Errorf("%s with Done closed and a nil Err: %+v, %v; with a cancelled context: %+v, %v", name, sum, got, wantSum, want)
		}
	}
}
