package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sessdb/gates"
	"sessdb/internal/faults"
)

// An I/O error at each of check's steps added for the looks that hold no
// lock is reported, as the fault point's doc says, and ends nothing: the
// look at a key dir after its listing (check/after-key-listed) is
// unreadable; the look at a reap-owned dir, once opened or found with no
// meta.db (check/reaped-dir-open, reaped/no-meta), is that dir's
// unreadable meta.db.
func TestCheckReportsAnErrorAtItsUnlockedLooksSteps(t *testing.T) {
	injected := errors.New("injected: input/output error")
	for _, tc := range []struct {
		point faults.Point
		// make lays out the root and returns the path the finding names.
		make func(t *testing.T, s *Store, root string) string
		kind Kind
		says string // in the finding's detail, before the error's text
	}{
		{faults.CheckAfterKeyListed, func(t *testing.T, s *Store, root string) string {
			return chkKey(t, s, "listed")
		}, KindUnreadable, ""},
		{faults.CheckReapedDirOpen, func(t *testing.T, s *Store, root string) string {
			key := chkKey(t, s, "reaped open")
			reaped := ReapedPrefix + key + "-0123456789abcdef"
			if err := os.Rename(filepath.Join(root, key), filepath.Join(root, reaped)); err != nil {
				t.Fatal(err)
			}
			return reaped
		}, KindReapInterrupted, "its meta.db could not be read ("},
		{faults.ReapedNoMeta, func(t *testing.T, s *Store, root string) string {
			chkKey(t, s, "reaped, no meta.db") // the root made
			reaped := ReapedPrefix + testKey + "-0123456789abcdef"
			if err := os.Mkdir(filepath.Join(root, reaped), 0o700); err != nil {
				t.Fatal(err)
			}
			return reaped
		}, KindReapInterrupted, "its meta.db could not be read ("},
	} {
		t.Run(string(tc.point), func(t *testing.T) {
			s, root, _ := newTestStore(t, gates.Bounds{})
			path := tc.make(t, s, root)
			faults.Set(func(p faults.Point) error {
				if p == tc.point {
					return injected
				}
				return nil
			})
			t.Cleanup(func() { faults.Set(nil) })
			found := checkFindings(t, s, CheckOptions{})
			f := chkFind(found, path, tc.kind)
			if f == nil || f.Severity != SeverityProblem || !strings.Contains(f.Detail, tc.says+injected.Error()) {
				t.Errorf("an error at %s: %s at %s is %+v; want a %s problem saying %q", tc.point, tc.kind, path, f, tc.kind, tc.says+injected.Error())
			}
			if len(found) != 1 {
				t.Errorf("an error at %s: %d findings, want 1: %+v", tc.point, len(found), found)
			}
		})
	}
}

// An error at reaped/no-meta, in a reap or check --repair, fails the
// finishing of that reap-owned dir, as the point's doc says: the reap
// reports it failed, check --repair not repaired, and the dir is left as
// it is.
func TestAnErrorWhereAReapFindsNoMetaDBLeavesTheDir(t *testing.T) {
	injected := errors.New("injected: input/output error")
	t.Cleanup(func() { faults.Set(nil) })
	for _, repair := range []bool{false, true} {
		s, root, _ := newTestStore(t, gates.Bounds{})
		chkKey(t, s, "finish, no meta.db") // the root made
		reaped := ReapedPrefix + testKey + "-0123456789abcdef"
		if err := os.Mkdir(filepath.Join(root, reaped), 0o700); err != nil {
			t.Fatal(err)
		}
		faults.Set(func(p faults.Point) error {
			if p == faults.ReapedNoMeta {
				return injected
			}
			return nil
		})
		if repair {
			f := chkFind(checkFindings(t, s, CheckOptions{Repair: true}), reaped, KindReapInterrupted)
			if f == nil || f.Repaired || !strings.Contains(f.Repair, injected.Error()) {
				t.Errorf("check --repair with an error at %s: %+v; want %s not repaired, saying %q", faults.ReapedNoMeta, f, reaped, injected)
			}
		} else {
			res, err := s.Reap(false)
			if err != nil || len(res.Failed) != 1 || res.Failed[0] != reaped || !strings.Contains(res.Skipped[reaped], injected.Error()) {
				t.Errorf("reap with an error at %s: %+v, %v; want %s failed, saying %q", faults.ReapedNoMeta, res, err, reaped, injected)
			}
		}
		faults.Set(nil)
		if _, err := os.Lstat(filepath.Join(root, reaped)); err != nil {
			t.Errorf("repair %t: the reap-owned dir after the error: %v; want it left", repair, err)
		}
	}
}
