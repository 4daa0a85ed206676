package store

import (
	"bytes"
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
	"sessdb/internal/durable"
	"sessdb/internal/faults"
)

// entryErrnoEnv, set in a reap's child, makes the reaping entry's commit
// fail as on a full disk (runOpsChild); renameNoSpaceEnv makes its disk
// refuse to rename a dir, as a full one may.
const (
	entryErrnoEnv    = "SESSDB_REAP_ENTRY_NOSPACE"
	renameNoSpaceEnv = "SESSDB_REAP_RENAME_NOSPACE"
)

// expiredBesideFresh makes testKey expired (promoted 30 days ago, past
// opsTTL) beside a fresh key, and returns the fresh key and testKey's
// transcript.
func expiredBesideFresh(t *testing.T, s *Store, root string, clock *testClock) (fresh string, transcript []byte) {
	t.Helper()
	expiredKey(t, s, clock, testKey)
	fresh = Key("github", "a/b", "fresh")
	runJob(t, s, fresh, localJob(), PromoteRequest{}, "fresh")
	return fresh, readCanonical(t, root, testKey)
}

// leftOnly fails unless the root holds only name.
func leftOnly(t *testing.T, root, name string) {
	t.Helper()
	left, _ := os.ReadDir(root)
	if len(left) != 1 || left[0].Name() != name {
		t.Fatalf("left under the root: %v, want only %s", left, name)
	}
}

// A reap is what an operator runs to free a full disk, and on a
// copy-on-write file system (btrfs) a full disk or quota refuses every
// bbolt commit, the reaping entry's too: the reap then removes the
// expired key without its entry. It failed every key instead ("commit
// meta.db: write meta.db: no space left on device", on a full btrfs and
// on a btrfs qgroup's EDQUOT), and removed nothing. Any other failure of
// that commit still keeps the key whole.
func TestAReapOnAFullDiskRemovesTheKeyWithoutItsEntry(t *testing.T) {
	for _, c := range []struct {
		errno   syscall.Errno
		removed bool
	}{{syscall.ENOSPC, true}, {syscall.EDQUOT, true}, {syscall.EIO, false}} {
		t.Run(c.errno.Error(), func(t *testing.T) {
			s, root, clock := newTestStore(t, gates.Bounds{TTL: opsTTL})
			fresh, transcript := expiredBesideFresh(t, s, root, clock)
			reached := false
			faults.Set(func(p faults.Point) error {
				if p == faults.ReapEntry {
					reached = true
					return c.errno
				}
				return nil
			})
			res, err := s.Reap(false)
			faults.Set(nil)
			if err != nil || !reached {
				t.Fatalf("reap: %v; its reaping entry's commit reached: %v", err, reached)
			}
			if !c.removed {
				if len(res.Removed) != 0 || !slices.Equal(res.Failed, []string{testKey}) || !strings.Contains(res.Skipped[testKey], c.errno.Error()) {
					t.Fatalf("reap whose entry failed with %v = %+v; want %s failed, nothing removed", c.errno, res, testKey)
				}
				sess, _ := checkDescribed(t, s, root, testKey)
				want(t, sess, false, gates.Expired)
				if !bytes.Equal(readCanonical(t, root, testKey), transcript) {
					t.Fatal("the key kept is not whole")
				}
				return
			}
			if !slices.Equal(res.Removed, []string{testKey}) || len(res.Skipped) != 0 {
				t.Fatalf("reap on a full disk = %+v; want %s removed, nothing skipped", res, testKey)
			}
			leftOnly(t, root, fresh)
			got, _ := checkDescribed(t, s, root, fresh)
			want(t, got, true, gates.Resumed)
		})
	}
}

// A reap on a full disk that is stopped after its rename, with no reaping
// entry to say what it was removing, leaves a dir the next reap cannot
// tell from one a promotion landed in after the stop: it moves it back to
// its key, which never resumes (expired; absent, its transcript already
// removed) and which the reap after removes. Nothing is lost; what was
// being reaped comes back until then.
func TestAReapOnAFullDiskStoppedAfterItsRenameGivesTheKeyBack(t *testing.T) {
	for _, p := range []faults.Point{faults.ReapAfterRename, faults.ReapAfterTranscript} {
		for _, kill := range []bool{false, true} {
			t.Run(string(p)+map[bool]string{false: "/error", true: "/kill"}[kill], func(t *testing.T) {
				s, root, clock := newTestStore(t, gates.Bounds{TTL: opsTTL})
				fresh, transcript := expiredBesideFresh(t, s, root, clock)
				if kill {
					t.Setenv(entryErrnoEnv, "1")
					interrupt(t, s, root, clock, "reap-kill-at", p, true, func() {})
				} else {
					faults.Set(func(q faults.Point) error {
						switch q {
						case faults.ReapEntry:
							return syscall.ENOSPC
						case p:
							return errors.New("injected")
						}
						return nil
					})
					s.Reap(false)
					faults.Set(nil)
				}
				aside, _ := filepath.Glob(filepath.Join(root, ReapedPrefix+testKey+"-*"))
				if len(aside) != 1 {
					t.Fatalf("%d reap-owned dirs after the rename, want 1", len(aside))
				}
				sess, _ := checkDescribed(t, s, root, testKey)
				want(t, sess, false, gates.Absent)
				found := checkFindings(t, s, CheckOptions{})
				if len(found) != 1 || found[0].Kind != KindReapInterrupted || found[0].Key != testKey || !strings.Contains(found[0].Detail, "on a full disk, recorded none of its own") {
					t.Fatalf("check of what the reap left: %+v", found)
				}

				res, err := s.Reap(false)
				if err != nil || len(res.Restored) != 1 || filepath.Join(root, res.Restored[0]) != aside[0] {
					t.Fatalf("the next reap = %+v, %v; want %s moved back", res, err, aside[0])
				}
				sess, _ = checkDescribed(t, s, root, testKey)
				if p == faults.ReapAfterRename {
					want(t, sess, false, gates.Expired)
					if !bytes.Equal(readCanonical(t, root, testKey), transcript) {
						t.Fatal("the key moved back is not whole")
					}
				} else {
					want(t, sess, false, gates.Absent) // its transcript removed
				}

				res, err = s.Reap(false)
				if err != nil || !slices.Equal(res.Removed, []string{testKey}) || len(res.Skipped) != 0 {
					t.Fatalf("the reap after = %+v, %v; want %s removed", res, err, testKey)
				}
				leftOnly(t, root, fresh)
			})
		}
	}
}

// Out of room, a file system may refuse the rename that moves a key dir
// aside (btrfs whose metadata is full, a full xfs: ENOSPC; a btrfs
// qgroup at its limit: EDQUOT), never an unlink: the reap removes the key
// in place, under its lock, and says it removed it. A reap failed every
// such key, whole, until room was made by hand.
func TestAReapWhoseRenameIsRefusedForSpaceRemovesTheKeyInPlace(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.ENOSPC, syscall.EDQUOT} {
		t.Run(errno.Error(), func(t *testing.T) {
			s, root, clock := newTestStore(t, gates.Bounds{TTL: opsTTL})
			fresh, _ := expiredBesideFresh(t, s, root, clock)
			s.disk = diskWrites{dirsNotRenamed{durable.Disk{}, errno}}
			res, err := s.Reap(false)
			if err != nil || !slices.Equal(res.Removed, []string{testKey}) || len(res.Skipped) != 0 {
				t.Fatalf("reap whose rename met %v = %+v, %v; want %s removed", errno, res, err, testKey)
			}
			leftOnly(t, root, fresh)
			got, _ := checkDescribed(t, s, root, fresh)
			want(t, got, true, gates.Resumed)
		})
	}
}

// A reap removing a key in place that stops after the transcript (an
// error, or a SIGKILL) leaves the key cold (absent: its record names a
// transcript gone), never half a key that resumes, and the next reap
// removes the rest.
func TestAReapInPlaceStoppedAfterTheTranscriptLeavesTheKeyCold(t *testing.T) {
	for _, kill := range []bool{false, true} {
		t.Run(map[bool]string{false: "error", true: "kill"}[kill], func(t *testing.T) {
			s, root, clock := newTestStore(t, gates.Bounds{TTL: opsTTL})
			fresh, _ := expiredBesideFresh(t, s, root, clock)
			if kill {
				t.Setenv(renameNoSpaceEnv, "1")
				interrupt(t, s, root, clock, "reap-kill-at", faults.ReapAfterTranscript, true, func() {})
			} else {
				s.disk = diskWrites{roomless(durable.Disk{})}
				interrupt(t, s, root, clock, "", faults.ReapAfterTranscript, false, func() {
					if res, _ := s.Reap(false); !slices.Equal(res.Failed, []string{testKey}) {
						t.Errorf("reap stopped in place = %+v; want %s failed", res, testKey)
					}
				})
				s.disk = diskWrites{}
			}
			if _, err := os.Lstat(filepath.Join(root, testKey, TranscriptName)); !os.IsNotExist(err) {
				t.Fatalf("the transcript is still there (%v): the reap did not stop where it was asked", err)
			}
			sess, _ := checkDescribed(t, s, root, testKey)
			want(t, sess, false, gates.Absent)
			found := checkFindings(t, s, CheckOptions{})
			if len(found) != 1 || found[0].Kind != KindTranscriptMismatch || found[0].Key != testKey {
				t.Fatalf("check of the key left: %+v; want its transcript-mismatch (missing)", found)
			}

			res, err := s.Reap(false)
			if err != nil || !slices.Equal(res.Removed, []string{testKey}) || len(res.Skipped) != 0 {
				t.Fatalf("the next reap = %+v, %v; want %s removed", res, err, testKey)
			}
			leftOnly(t, root, fresh)
		})
	}
}

// A writer in another process that makes a meta.db in a key dir a reap
// is removing in place, after the reap's unlink of its own and before its
// rmdir, keeps the dir: the rmdir fails, the reap says the key failed, and
// the writer's promotion is the key's, which resumes.
func TestAWriterThatMakesAMetaDBInAKeyReapedInPlaceKeepsTheKey(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{TTL: opsTTL})
	expiredKey(t, s, clock, testKey)
	var child *exec.Cmd
	s.disk = diskWrites{roomless(removedHook{removed: func(dir *os.File, name string) {
		if child != nil || name != db.FileName || filepath.Base(dir.Name()) != testKey {
			return
		}
		child, _ = startChild(t, "kill-at", "SESSDB_ROOT="+root, "SESSDB_KEY="+testKey, "SESSDB_MARKER=the writer's")
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(time.Millisecond) {
			if _, err := os.Lstat(filepath.Join(root, testKey, db.FileName)); err == nil {
				return // the writer's meta.db, made; its lock waits for the reap's
			}
			if time.Now().After(deadline) {
				t.Error("the writer made no meta.db in 20 s")
				return
			}
		}
	}})}
	res, err := s.Reap(false)
	if child == nil {
		t.Fatal("the reap never removed meta.db in place")
	}
	if werr := child.Wait(); werr != nil {
		t.Fatalf("the writer: %v", werr)
	}
	if err != nil || len(res.Removed) != 0 || !slices.Equal(res.Failed, []string{testKey}) || !strings.Contains(res.Skipped[testKey], "directory not empty") {
		t.Fatalf("reap = %+v, %v; want %s failed, its rmdir refused", res, err, testKey)
	}
	s.disk = diskWrites{}
	sess, data := checkDescribed(t, s, root, testKey)
	if !sess.Resume || markerOf(data, 1) != "the writer's" {
		t.Fatalf("after the reap, the key = %+v, %q last; want the writer's promotion resumed", sess, markerOf(data, 1))
	}
}
