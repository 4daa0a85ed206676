package store

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/rs/zerolog"

	"sessdb/gates"
)

// A resolve whose job dir cannot be made (its parent a file), given up
// while it tried, logs the step it was at as "job-dir": the first step,
// which TestACancelLogsTheStepItWasAt never saw logged (its first look
// at ctx returns before any step), so a resolve that began at "key"
// (mutant S17) passed it.
func TestAResolveGivenUpAtItsJobDirLogsTheJobDirStep(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	log := &bytes.Buffer{}
	s.opts.Logger = zerolog.New(log)
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := &countdown{Context: context.Background()}
	ctx.n.Store(1) // the entry's look passes; every later one is the cancel
	_, err := s.ResolveContext(ctx, testKey, localJob(), filepath.Join(file, "job"))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("ResolveContext = %v; want context.Canceled", err)
	}
	if got := cancelledSteps(t, log, "session_resolve_cancelled"); !slices.Equal(got, []string{"job-dir"}) {
		t.Fatalf("the resolve given up logged the steps %q, want [job-dir]", got)
	}
}
