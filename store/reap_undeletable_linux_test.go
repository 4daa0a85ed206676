package store

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"sessdb/gates"
	"sessdb/internal/faults"
)

// chattr sets (+i) or clears (-i) the immutable attribute of path, or
// skips t naming why where the machine will not (not root, a file system
// without it).
func chattr(t *testing.T, flag, path string) {
	t.Helper()
	if out, err := exec.Command("chattr", flag, path).CombinedOutput(); err != nil {
		t.Skipf("chattr %s %s: %v: %s (root on ext4, xfs or btrfs is needed)", flag, path, err, out)
	}
}

// An expired key with an immutable entry (its transcript; a stray temp,
// which the removal met after the transcript was gone) is failed whole by
// the run, before its rename, as its dry run fails it: the key stays at
// its name, resumed as before, nothing reap-owned left. Before, the run
// renamed it aside and its removal was refused: the key gone and
// .reaped-<key>-<random> failed by every reap after (with the temp, the
// transcript and meta.db already removed from it), while the dry run said
// it would remove the key. Once the attribute is cleared the next reap
// removes it whole. A reap-owned dir holding an immutable entry is failed
// whole too, nothing of it removed, by the run and the dry run alike.
func TestReapLeavesWholeAKeyWithAnImmutableEntry(t *testing.T) {
	for _, entry := range []string{TranscriptName, ".current.jsonl.tmp-00000000000000aa"} {
		t.Run(entry, func(t *testing.T) {
			s, root, clock := newTestStore(t, gates.Bounds{TTL: opsTTL})
			expiredKey(t, s, clock, testKey)
			p := filepath.Join(root, testKey, entry)
			if entry != TranscriptName {
				if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			chattr(t, "+i", p)
			t.Cleanup(func() { exec.Command("chattr", "-R", "-i", root).Run() })
			for _, dry := range []bool{true, false} {
				res, err := s.Reap(dry)
				if err != nil || len(res.Removed) != 0 || !slices.Equal(res.Failed, []string{testKey}) ||
					!strings.Contains(res.Skipped[testKey], "immutable") || !errors.Is(res.Causes[testKey], unix.EPERM) {
					t.Fatalf("reap (dry %v) = %+v, %v; want the key failed whole, immutable named", dry, res, err)
				}
			}
			if aside, _ := filepath.Glob(filepath.Join(root, ReapedPrefix+"*")); len(aside) > 0 {
				t.Fatalf("the key was renamed aside: %v", aside)
			}
			s.opts.Bounds = gates.Bounds{} // resolve it as before the TTL
			got, _ := checkDescribed(t, s, root, testKey)
			want(t, got, true, gates.Resumed)
			s.opts.Bounds = gates.Bounds{TTL: opsTTL}

			chattr(t, "-i", p)
			res, err := s.Reap(false)
			if err != nil || !slices.Equal(res.Removed, []string{testKey}) || len(res.Skipped) != 0 {
				t.Fatalf("reap once the attribute is cleared = %+v, %v", res, err)
			}
			if names, _ := os.ReadDir(root); len(names) != 0 {
				t.Fatalf("left under the root: %v", names)
			}
		})
	}
	t.Run("reaped", func(t *testing.T) {
		s, root, clock := newTestStore(t, gates.Bounds{TTL: opsTTL})
		expiredKey(t, s, clock, testKey)
		faults.Set(func(p faults.Point) error {
			if p == faults.ReapAfterRename {
				return errors.New("killed")
			}
			return nil
		})
		s.Reap(false)
		faults.Set(nil)
		left, _ := filepath.Glob(filepath.Join(root, ReapedPrefix+"*"))
		if len(left) != 1 {
			t.Fatalf("the killed reap left %v", left)
		}
		aside := filepath.Base(left[0])
		temp := filepath.Join(root, aside, ".current.jsonl.tmp-00000000000000aa")
		if err := os.WriteFile(temp, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		chattr(t, "+i", temp)
		t.Cleanup(func() { exec.Command("chattr", "-R", "-i", root).Run() })
		for _, dry := range []bool{true, false} {
			res, err := s.Reap(dry)
			if err != nil || len(res.Finished) != 0 || !slices.Equal(res.Failed, []string{aside}) || !strings.Contains(res.Skipped[aside], "immutable") {
				t.Fatalf("reap (dry %v) = %+v, %v; want the reap-owned dir failed whole", dry, res, err)
			}
		}
		names, _ := os.ReadDir(filepath.Join(root, aside))
		if len(names) != 3 {
			t.Fatalf("the reap-owned dir holds %v; want its transcript, meta.db and the temp, nothing removed", names)
		}
		chattr(t, "-i", temp)
		if res, err := s.Reap(false); err != nil || !slices.Equal(res.Finished, []string{aside}) || len(res.Skipped) != 0 {
			t.Fatalf("reap once the attribute is cleared = %+v, %v", res, err)
		}
	})
}
