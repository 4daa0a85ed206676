package store

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sessdb/gates"
)

// check's finding on a reap-owned dir a promotion landed in says what the
// next reap does with it: it moves it back when the key's name is free (or
// an empty dir), and it refuses (ErrReapedKeyExists) when the key exists
// again. check said "the next reap or check --repair moves it back" to
// both, where the reap then failed the second.
func TestCheckSaysALandedReapedDirIsNotMovedBackOverAKey(t *testing.T) {
	for _, taken := range []bool{false, true} {
		s, root, _ := newTestStore(t, gates.Bounds{})
		key := Key("a", "b", "check taken")
		runJob(t, s, key, localJob(), PromoteRequest{}, "landed")
		aside := ReapedPrefix + key + "-00000000000000ee"
		if err := os.Rename(keyDirPath(root, key), filepath.Join(root, aside)); err != nil {
			t.Fatal(err)
		}
		if taken {
			runJob(t, s, key, localJob(), PromoteRequest{}, "the key made again")
		}
		var f *Finding
		for _, x := range checkFindings(t, s, CheckOptions{}) {
			if x.Path == aside && x.Kind == KindReapInterrupted {
				f = &x
			}
		}
		if f == nil {
			t.Fatalf("taken %v: no reap-interrupted finding on %s", taken, aside)
		}
		promises := strings.Contains(f.Detail, "the next reap or check --repair moves it back")
		if promises == taken {
			t.Errorf("taken %v: %q", taken, f.Detail)
		}
		res, err := s.Reap(false)
		if err != nil || (len(res.Restored) == 1) == taken {
			t.Errorf("taken %v: reap = %+v, %v", taken, res, err)
		}
	}
}

// check's finding on a reap-owned dir to finish says what the next reap
// does with it: it removes it when everything in it is the store's, and
// refuses (ErrForeignEntry) when something is not. check said "the next
// reap or check --repair removes it" to both.
func TestCheckSaysAReapedDirHoldingForeignEntriesIsNotRemoved(t *testing.T) {
	for _, foreign := range []bool{false, true} {
		s, root, _ := newTestStore(t, gates.Bounds{})
		key := Key("a", "b", "check foreign")
		name := ReapedPrefix + key + "-00000000000000ee"
		aside := filepath.Join(root, name)
		if err := os.MkdirAll(aside, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(aside, TranscriptName), []byte("x\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if foreign {
			mustMkdir(t, filepath.Join(aside, "sub"))
		}
		var f *Finding
		for _, x := range checkFindings(t, s, CheckOptions{}) {
			if x.Path == name && x.Kind == KindReapInterrupted {
				f = &x
			}
		}
		if f == nil {
			t.Fatalf("foreign %v: no reap-interrupted finding on %s", foreign, name)
		}
		if promises := strings.Contains(f.Detail, "the next reap or check --repair removes it"); promises == foreign {
			t.Errorf("foreign %v: %q", foreign, f.Detail)
		}
		res, err := s.Reap(false)
		if err != nil || (len(res.Finished) == 1) == foreign {
			t.Errorf("foreign %v: reap = %+v, %v", foreign, res, err)
		}
	}
}
