package store

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/faults"
)

// A first promotion killed before its commit leaves its key dir with a
// meta.db that holds nothing (its lock) and its staged temp. Reap keeps
// such a key, as any key with no transcript, and sweeps its temp once
// stale; check then finds nothing, and the key's next promotion lands. Before, reap judged it by its
// transcript's mtime, which it has not: at every reap the key was
// skipped with "lstat <key>/current.jsonl: no such file or directory",
// counted neither kept nor failed, and its temp was never swept.
func TestReapKeepsAKeyAFirstPromotionDiedInAndSweepsItsTemp(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{TTL: 24 * time.Hour})
	key := testKey
	cmd, _ := startChild(t, "kill-at", "SESSDB_ROOT="+root, "SESSDB_KEY="+key, "SESSDB_POINT="+string(faults.PromoteAfterTempSync), "SESSDB_MARKER=killed")
	var ee *exec.ExitError
	if err := cmd.Wait(); !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the first promotion was not killed: %v", err)
	}
	names := dirNames(t, filepath.Join(root, key))
	if len(names) != 2 || !strings.HasPrefix(names[0], tmpPrefix) || names[1] != "meta.db" {
		t.Fatalf("the key dir holds %v; want the killed promotion's temp and its meta.db", names)
	}
	temp := names[0]
	if sc := sidecarsOf(t, root, key); sc != (db.Sidecars{}) {
		t.Fatalf("the killed promotion's meta.db holds %+v", sc)
	}
	old := clock.now.Add(-2 * time.Hour)
	os.Chtimes(filepath.Join(root, key, temp), old, old)
	clock.now = clock.now.Add(72 * time.Hour)

	for _, dry := range []bool{true, false} {
		r, err := s.Reap(dry)
		if err != nil || r.Kept != 1 || len(r.Skipped) != 0 || len(r.Removed) != 0 || !slices.Equal(r.Swept, []string{key + "/" + temp}) {
			t.Fatalf("reap (dry run %v) = %+v, %v; want the key kept, its temp swept", dry, r, err)
		}
	}
	if names := dirNames(t, filepath.Join(root, key)); !slices.Equal(names, []string{"meta.db"}) {
		t.Fatalf("after the reap the key dir holds %v; want its meta.db alone", names)
	}
	if found := checkFindings(t, s, CheckOptions{}); len(found) != 0 {
		t.Fatalf("check after the reap: %+v", found)
	}
	// And the key's next promotion lands.
	runJob(t, s, key, localJob(), PromoteRequest{}, "again")
	got, _ := checkDescribed(t, s, root, key)
	want(t, got, true, gates.Resumed)
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}
