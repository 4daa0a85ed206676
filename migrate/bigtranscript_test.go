package migrate

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
)

// readChunk is what store.ReadCRC32C reads between two looks at its
// context.
const readChunk = 1 << 20

// bigSize is the apparent size of the sparse transcripts below: large
// enough that a read of it shows in the count, small enough that the
// read the old code made costs the test well under a second.
const bigSize = 64 << 20

// countingSource replaces transcriptSource for one test: it counts the
// bytes read through it and calls after (if set) once, after the first
// read.
type countingSource struct {
	f     io.ReaderAt
	n     *atomic.Int64
	after func()
	once  *sync.Once
}

func (c countingSource) ReadAt(b []byte, off int64) (int, error) {
	n, err := c.f.ReadAt(b, off)
	c.n.Add(int64(n))
	if c.after != nil {
		c.once.Do(c.after)
	}
	return n, err
}

// countReads makes every transcript read of the test go through a
// countingSource, and returns the count.
func countReads(t *testing.T, after func()) *atomic.Int64 {
	n := &atomic.Int64{}
	once := &sync.Once{}
	old := transcriptSource
	transcriptSource = func(f *os.File) io.ReaderAt { return countingSource{f, n, after, once} }
	t.Cleanup(func() { transcriptSource = old })
	return n
}

// sparseTranscript makes the key's current.jsonl a transcript whose
// first lines are whole, followed by a hole up to bigSize bytes (a
// container can hand the legacy worker such a file: it copied what it
// was given, whatever its size), its mtime kept.
func sparseTranscript(t *testing.T, dir string) {
	t.Helper()
	p := filepath.Join(dir, "current.jsonl")
	st, err := os.Stat(p)
	must(t, err)
	must(t, os.Truncate(p, bigSize))
	must(t, os.Chtimes(p, st.ModTime(), st.ModTime()))
}

// TestAStopMidTranscriptReadLeavesTheKeyAsItWas: a stop (Ctrl-C, SIGTERM)
// while a migration reads a key's transcript to record its checksum
// abandons the read within a chunk, as check and dump --verify abandon
// theirs (operations.md), instead of reading on to the end of a file
// whose size its owner chose: the key is left as it was (its legacy
// files, no meta.db; or its meta.db, no legacy file), not delivered, and
// the run ends interrupted.
func TestAStopMidTranscriptReadLeavesTheKeyAsItWas(t *testing.T) {
	for _, toLegacy := range []bool{false, true} {
		t.Run(direction(toLegacy), func(t *testing.T) {
			root, key := oneKey(t)
			dir := filepath.Join(root, key)
			sparseTranscript(t, dir)
			if toLegacy {
				if r, _ := migrate(t, root, false, testOpts()); r[key].Action != Migrated {
					t.Fatalf("to-db first: %+v", r[key])
				}
			}
			before := treeState(t, root, true, true)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			n := countReads(t, cancel)
			run := ToDBContext
			if toLegacy {
				run = ToLegacyContext
			}
			var got []Report
			sum, err := run(ctx, root, testOpts(), func(r Report) error { got = append(got, r); return nil })
			if !errors.Is(err, context.Canceled) || !sum.Interrupted {
				t.Errorf("the run stopped mid-read: err %v, interrupted %v; want context.Canceled, interrupted", err, sum.Interrupted)
			}
			for _, r := range got {
				if r.Key == key {
					t.Errorf("the key cut short was delivered: %+v", r)
				}
			}
			if read := n.Load(); read > 2*readChunk {
				t.Errorf("%d bytes of the %d-byte transcript read after the stop; want at most two chunks (%d)", read, bigSize, 2*readChunk)
			}
			// The key dir's own mtime aside: ToDB made meta.db for its
			// lock and took it away again, as it does for a key it finds
			// locked.
			after := treeState(t, root, true, true)
			delete(before, key)
			delete(after, key)
			if d := diffStates(before, after); d != "" {
				t.Errorf("the key was changed:\n%s", d)
			}
		})
	}
}

// TestRollbackReadsNoMoreOfATranscriptThanItsRecordCouldMatch: a
// transcript in place that is not its record's size (here a sparse file
// of 64 MiB where the record says a few hundred bytes: damage, or a file
// put there by hand) cannot match the record, whatever its bytes: the
// rollback stamps the key "(pending)" as for any mismatch, and reads no
// more of it than the record's size and one byte, as check does, not the
// whole file twice (the plan's checksum and the mtime's).
func TestRollbackReadsNoMoreOfATranscriptThanItsRecordCouldMatch(t *testing.T) {
	root, key := oneKey(t)
	dir := filepath.Join(root, key)
	if r, _ := migrate(t, root, false, testOpts()); r[key].Action != Migrated {
		t.Fatalf("to-db first: %+v", r[key])
	}
	sc, ok := dbValues(t, dir)
	if !ok || sc.Transcript == nil {
		t.Fatalf("no record: %s", fmtSidecars(sc))
	}
	sparseTranscript(t, dir)
	n := countReads(t, nil)
	got, _ := migrate(t, root, true, testOpts())
	r := got[key]
	if r.Action != Migrated || r.Values == nil || r.Values.Venue == nil || *r.Values.Venue != "(pending)" {
		t.Errorf("rollback of a transcript that does not match its record: %+v; want migrate, venue (pending)", r)
	}
	if read, bound := n.Load(), sc.Transcript.Size+1; read > bound {
		t.Errorf("%d bytes read of a %d-byte transcript whose record says %d bytes; want at most %d", read, bigSize, sc.Transcript.Size, bound)
	}
	b, err := os.ReadFile(filepath.Join(dir, "venue"))
	if err != nil || string(b) != "(pending)" {
		t.Errorf("venue after the rollback: %q, %v", b, err)
	}
}
