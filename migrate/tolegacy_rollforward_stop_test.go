package migrate

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sessdb/internal/faults"
)

// TestToLegacyStoppedInItsRollForwardRenamesNothing: --to-legacy rolls a
// pending promotion forward before it writes the legacy files, reading
// the temp (a file of gigabytes, possibly) to its end. A stop there (Ctrl-C,
// a Go caller's cancel) read it whole all the same and renamed it into
// place: the run then ended at the transcript's read, the key not
// printed, as if left as it was, while its promotion had been rolled
// forward. Now the roll-forward takes the run's ctx: nothing is renamed
// or swept, the key is left as it was and not delivered, and the run is
// interrupted; a re-run converts it.
func TestToLegacyStoppedInItsRollForwardRenamesNothing(t *testing.T) {
	root, key := oneKey(t)
	if r, _ := migrate(t, root, false, testOpts()); r[key].Action != Migrated {
		t.Fatalf("to-db first: %+v", r[key])
	}
	committedNotRenamed(t, root, key)
	before := treeState(t, root, false, true)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stops := 0
	t.Cleanup(func() { faults.Set(nil) })
	faults.Set(func(p faults.Point) error {
		if p == faults.RollForwardTempRead {
			stops++
			cancel()
		}
		return nil
	})
	var got []Report
	sum, err := ToLegacyContext(ctx, root, testOpts(), func(r Report) error { got = append(got, r); return nil })
	faults.Set(nil)
	if stops != 1 {
		t.Fatalf("the roll-forward's read was reached %d times; want once", stops)
	}
	if !errors.Is(err, context.Canceled) || !sum.Interrupted {
		t.Errorf("the run stopped in its roll-forward: err %v, interrupted %v; want context.Canceled, interrupted", err, sum.Interrupted)
	}
	for _, r := range got {
		if r.Key == key {
			t.Errorf("the key stopped before anything was done was delivered: %+v", r)
		}
	}
	if d := diffStates(before, treeState(t, root, false, true)); d != "" {
		t.Errorf("the stopped roll-forward changed the key dir:\n%s", d)
	}
	if r, _ := migrate(t, root, true, testOpts()); r[key].Action != Migrated {
		t.Errorf("the re-run: %+v; want it migrated", r[key])
	}
}

// A --to-legacy stop once the roll-forward is done (the temp renamed into
// place, meta.db's pending entry cleared), cut at the transcript's read
// that follows: the key was not printed, as a key left as it was, though
// its promotion had been rolled forward. It is printed failed now, saying
// that nothing was written and the promotion was rolled forward only, and
// the run is interrupted.
func TestToLegacyStoppedAfterItsRollForwardSaysSo(t *testing.T) {
	root, key := oneKey(t)
	if r, _ := migrate(t, root, false, testOpts()); r[key].Action != Migrated {
		t.Fatalf("to-db first: %+v", r[key])
	}
	tmp := committedNotRenamed(t, root, key)
	// The key alone in the root: the walk, with no key left to start,
	// does not say the run was stopped; the key's own end does.
	entries, err := os.ReadDir(root)
	must(t, err)
	for _, e := range entries {
		if e.Name() != key {
			must(t, os.RemoveAll(filepath.Join(root, e.Name())))
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	t.Cleanup(func() { faults.Set(nil) })
	faults.Set(func(p faults.Point) error {
		if p == faults.ToLegacyRolledForward {
			cancel()
		}
		return nil
	})
	var got []Report
	sum, err := ToLegacyContext(ctx, root, testOpts(), func(r Report) error { got = append(got, r); return nil })
	faults.Set(nil)
	if _, lerr := os.Lstat(tmp); !os.IsNotExist(lerr) {
		t.Fatalf("the temp after the roll-forward: %v; want it renamed into place", lerr)
	}
	if !errors.Is(err, context.Canceled) || !sum.Interrupted {
		t.Errorf("the run stopped after its roll-forward: err %v, interrupted %v; want context.Canceled, interrupted", err, sum.Interrupted)
	}
	i := slices.IndexFunc(got, func(r Report) bool { return r.Key == key })
	if i < 0 {
		t.Fatalf("the key stopped after its roll-forward was not printed (%+v); want it printed failed, rolled forward only", got)
	}
	if r := got[i]; r.Action != Failed || !strings.Contains(r.Cause, "rolled forward only") ||
		!slices.ContainsFunc(r.Oddities, func(o Oddity) bool { return strings.Contains(o.ReadAs, "rolled forward first") }) || len(r.Written) != 0 {
		t.Errorf("the key stopped after its roll-forward: %+v; want it printed failed, rolled forward only, nothing written", r)
	}
	if r, _ := migrate(t, root, true, testOpts()); r[key].Action != Migrated {
		t.Errorf("the re-run: %+v; want it migrated", r[key])
	}
}
