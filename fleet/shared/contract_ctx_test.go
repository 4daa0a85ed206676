package shared

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sessdb/internal/hostilectx"
)

// The contexts that break Go's contract a caller may hand over.
type (
	closedNoErr = hostilectx.DoneNoErr
	errPanics   = hostilectx.ErrPanics
)

// Write, WriteAgain and ListOrphans are exported, and took a Go caller's
// ctx raw, looking only at its Err. Given a context whose Done was closed
// while its Err was nil, Write wrote the whole file and ListOrphans
// listed the whole dir, as if never cancelled; one whose Err panicked
// panicked in them, and Write's temp was left behind (its removal on
// error never ran). Each holds ctx to Go's contract now (callerctx.Of):
// the call ends with an error that wraps context.Canceled and Write
// leaves nothing.
func TestWritesAndListingsTakeAContextThatBreaksTheContract(t *testing.T) {
	for _, bad := range []struct {
		name string
		ctx  context.Context
	}{{"Done closed, Err nil", closedNoErr{Context: context.Background()}}, {"Err panics", errPanics{Context: context.Background()}}} {
		dir := t.TempDir()
		if _, _, _, err := Write(context.Background(), dir, key, 1, strings.NewReader("{}\n")); err != nil {
			t.Fatal(err)
		}
		for _, step := range []struct {
			name string
			run  func() error
		}{
			{"write", func() error { _, _, _, err := Write(bad.ctx, dir, key, 2, strings.NewReader("{}\n")); return err }},
			{"write again", func() error {
				_, _, err := WriteAgain(bad.ctx, dir, key+"/"+fileName(3, "0011223344556677"), strings.NewReader("{}\n"))
				return err
			}},
			{"list orphans", func() error {
				_, err := ListOrphans(bad.ctx, dir, func(string, string, time.Time) bool { return false }, time.Now().Add(time.Hour))
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
		if names, _ := os.ReadDir(filepath.Join(dir, key)); len(names) != 1 {
			var got []string
			for _, n := range names {
				got = append(got, n.Name())
			}
			t.Errorf("%s: the key's dir holds %v; want only the file written before", bad.name, got)
		}
	}
}
