package store

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"

	"sessdb/gates"
	"sessdb/internal/faults"
)

// A resolve whose ctx ends before a fault of its job dir (here: the job
// dir is a file) is given up as every resolve given up is, as the doc
// says: its error wraps ctx's, the fault said beside it, and it is logged
// as a cancel. Before, the error was the fault's alone while the log
// said session_resolve_cancelled, at info: a cancel a caller could not
// tell by errors.Is, and a fault an operator would not see as one.
func TestResolveGivenUpBeforeAFaultIsTheCancel(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	log := &bytes.Buffer{}
	s.opts.Logger = zerolog.New(log)
	jobDir := filepath.Join(t.TempDir(), "job")
	if err := os.WriteFile(jobDir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := &countdown{Context: context.Background()}
	ctx.n.Store(1) // the call's first look finds it live; every later one, done
	_, err := s.ResolveContext(ctx, testKey, localJob(), jobDir)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("a resolve given up, then a fault = %v; want context.Canceled", err)
	}
	if !bytes.Contains(log.Bytes(), []byte(`"session_resolve_cancelled"`)) || bytes.Contains(log.Bytes(), []byte(`"session_store_failed"`)) {
		t.Fatalf("logged %s, want session_resolve_cancelled alone", log.Bytes())
	}
}

// A fault met in the judgement once the caller gave up is said beside the
// cancel, and the error is the cancel's: errors.Is context.Canceled, not
// the fault, no ticket and no staged file left.
func TestResolveFaultAfterTheCancelIsTheCancel(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "first")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fault := errors.New("the meta.db open's own fault")
	faults.Set(func(p faults.Point) error {
		if p == faults.ResolveAfterMetaOpen {
			cancel()
			return fault
		}
		return nil
	})
	defer faults.Set(nil)
	jobDir := t.TempDir()
	_, err := s.ResolveContext(ctx, testKey, localJob(), jobDir)
	if !errors.Is(err, context.Canceled) || errors.Is(err, fault) {
		t.Fatalf("a fault after the cancel = %v; want context.Canceled, the fault said but not wrapped", err)
	}
	for _, name := range []string{filepath.Join(StagedDirName, TranscriptName), TicketName} {
		if _, err := os.Lstat(filepath.Join(jobDir, name)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s left: %v", name, err)
		}
	}
}
