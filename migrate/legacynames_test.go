package migrate

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// migrate retires the legacy writer's temps and nothing else that happens
// to end ".incoming": the writer named its temps
// current.jsonl.<pid>.<n>.incoming (once current.jsonl.incoming) and
// <sidecar>.incoming, so current.jsonl.bak.incoming or x.incoming is
// someone else's file, left where it is with its bytes. check and reap go
// by the same names (store/legacy.IsTemp), so what migrate leaves is what
// check calls unknown-entry and reap leaves the key whole for.
func TestMigrateRemovesOnlyTheLegacyWritersTemps(t *testing.T) {
	root, keys := newCorpus(t)
	key := keyNamed(keys, "plain")
	writers := []string{"current.jsonl.4242.0.incoming", "current.jsonl.incoming", "venue.incoming"}
	others := []string{"x.incoming", "current.jsonl.bak.incoming", "current.jsonl.4242.incoming", "lock.incoming"}
	for _, n := range append(slices.Clone(writers), others...) {
		must(t, os.WriteFile(filepath.Join(root, key, n), []byte("bytes of "+n), 0o600))
	}
	planned, _ := migrate(t, root, false, Options{DryRun: true, Now: testOpts().Now})
	got, _ := migrate(t, root, false, testOpts())
	p, r := planned[key], got[key]
	if r.Action != Migrated || p.Action != r.Action || !slices.Equal(p.Removed, r.Removed) {
		t.Fatalf("planned %s %v, did %s %v", p.Action, p.Removed, r.Action, r.Removed)
	}
	for _, n := range writers {
		if !slices.Contains(r.Removed, n) {
			t.Errorf("the legacy writer's temp %s not removed: removed %v", n, r.Removed)
		}
		if _, err := os.Lstat(filepath.Join(root, key, n)); !os.IsNotExist(err) {
			t.Errorf("%s after the run: %v", n, err)
		}
	}
	for _, n := range others {
		if slices.Contains(r.Removed, n) {
			t.Errorf("%s is not the legacy writer's, but migrate says it removed it: %v", n, r.Removed)
		}
		if b, err := os.ReadFile(filepath.Join(root, key, n)); err != nil || string(b) != "bytes of "+n {
			t.Errorf("%s after the run: %q, %v; want it left with its bytes", n, b, err)
		}
	}
	if again, _ := migrate(t, root, false, testOpts()); again[key].Action != Already || len(again[key].Removed) != 0 {
		t.Errorf("second run: %+v", again[key])
	}
}
