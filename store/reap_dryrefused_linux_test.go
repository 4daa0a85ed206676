package store

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/gates"
)

// A kept key's stray temps that the run's unlink would be refused (one
// immutable, beside one it removes) and an expired empty key dir whose
// rmdir would be (immutable) are what the dry run says the run does: the
// same temp swept, the same names failed with the same cause, nothing
// listed removed that the run then keeps. Before, the dry run asked only
// whether it may write in the key dir and the root: it listed both temps
// swept and the empty dir removed, exit 0, and the run failed both keys
// (EPERM).
func TestAReapsDryRunAsksWhatRefusesASweptTempOrAnEmptyKeyDir(t *testing.T) {
	ttl := 14 * 24 * time.Hour
	s, root, clock := newTestStore(t, gates.Bounds{TTL: ttl})
	kept, empty := Key("github", "a/b", "kept"), Key("github", "a/b", "empty")
	runJob(t, s, kept, localJob(), PromoteRequest{}, "a")
	stuck, loose := ".current.jsonl.tmp-00000000000000aa", ".current.jsonl.tmp-00000000000000bb"
	old := clock.now.Add(-2 * StaleTempAge)
	for _, n := range []string{stuck, loose} {
		p := filepath.Join(root, kept, n)
		if err := os.WriteFile(p, []byte("a dead promotion's"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(root, empty), 0o700); err != nil {
		t.Fatal(err)
	}
	past := clock.now.Add(-ttl - time.Hour)
	if err := os.Chtimes(filepath.Join(root, empty), past, past); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { exec.Command("chattr", "-R", "-i", root).Run() })
	chattr(t, "+i", filepath.Join(root, kept, stuck))
	chattr(t, "+i", filepath.Join(root, empty))

	var results [2]ReapResult
	for i, dry := range []bool{true, false} {
		res, err := s.Reap(dry)
		if err != nil {
			t.Fatalf("reap (dry %v): %v", dry, err)
		}
		if len(res.Removed) != 0 || !slices.Equal(res.Swept, []string{kept + "/" + loose}) || !slices.Equal(res.Failed, slices.Sorted(slices.Values([]string{empty, kept}))) {
			t.Errorf("reap (dry %v) = %+v; want %s swept alone, %s and %s failed, nothing removed", dry, res, loose, empty, kept)
		}
		for _, k := range []string{kept, empty} {
			if !errors.Is(res.Causes[k], unix.EPERM) {
				t.Errorf("reap (dry %v): %s's cause is %v; want EPERM", dry, k, res.Causes[k])
			}
		}
		results[i] = res
	}
	if !strings.Contains(results[0].Skipped[kept], stuck) || !strings.Contains(results[1].Skipped[kept], stuck) {
		t.Errorf("the failures do not name %s: dry run %q, run %q", stuck, results[0].Skipped[kept], results[1].Skipped[kept])
	}
	// The run says what refuses each, in its dry run's words, where the
	// kernel says only "operation not permitted": the line an operator
	// reads in the log of the run is the one that must say why.
	for _, k := range []string{kept, empty} {
		dry, run := results[0].Skipped[k], results[1].Skipped[k]
		if run != dry || !strings.Contains(run, "immutable or append-only") {
			t.Errorf("%s failed: the run says %q, its dry run %q; want the same words, naming the attribute", k, run, dry)
		}
	}
	for _, p := range []string{filepath.Join(kept, stuck), empty} {
		if _, err := os.Lstat(filepath.Join(root, p)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}

// A reap refused under the lock (an immutable temp) leaves a key as it
// found it: the empty meta.db of a key that holds nothing (a first
// promotion killed before its commit) stays, so the dir's mtime, the
// key's clock, is not set by the refusal; a legacy key's empty meta.db,
// a lock file a killed promotion left beside its transcript, goes as a
// lock file does, the key back in the legacy layout.
func TestARefusedReapLeavesADeadKeysMetaDBAndRemovesALegacyKeysLockFile(t *testing.T) {
	for _, which := range []string{"dead", "legacy"} {
		t.Run(which, func(t *testing.T) {
			s, root, clock := newTestStore(t, gates.Bounds{TTL: opsTTL})
			idle := clock.now.Add(-opsTTL - time.Hour)
			kd := deadKeyDir(t, root, nil, idle, idle)
			if which == "legacy" {
				p := filepath.Join(kd, TranscriptName)
				if err := os.WriteFile(p, transcriptBytes(idle), 0o600); err != nil {
					t.Fatal(err)
				}
				os.Chtimes(p, idle, idle)
			}
			temp := filepath.Join(kd, tmpPrefix+"00000000000000aa")
			if err := os.WriteFile(temp, []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
			os.Chtimes(temp, idle, idle)
			os.Chtimes(kd, idle, idle)
			t.Cleanup(func() { exec.Command("chattr", "-R", "-i", root).Run() })
			chattr(t, "+i", temp)
			res, err := s.Reap(false)
			if err != nil || !slices.Equal(res.Failed, []string{testKey}) || !errors.Is(res.Causes[testKey], unix.EPERM) {
				t.Fatalf("reap = %+v, %v; want the key refused", res, err)
			}
			_, err = os.Lstat(filepath.Join(kd, "meta.db"))
			if kept := err == nil; kept != (which == "dead") {
				t.Errorf("after the refusal meta.db is there: %v (%v); want %v", kept, err, which == "dead")
			}
		})
	}
}
