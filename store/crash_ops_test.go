package store

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/durable"
	"sessdb/internal/faults"
)

// The crash matrix of the two other protocols that remove or rename
// what a key holds: Reap, and check's move-aside repair. Each boundary is
// hit with an error return and with a SIGKILL of a re-exec'd child; the
// key must be usable (a cold start, never a resume of something its record
// does not describe) and the next run must finish the job.

var reapPoints = []faults.Point{faults.ReapBeforeRemove, faults.ReapBeforeRename, faults.ReapAfterRename, faults.ReapAfterTranscript}
var repairPoints = []faults.Point{faults.RepairBeforeAside, faults.RepairAfterAside}

const opsTTL = 14 * 24 * time.Hour

// runOpsChild is the child side: run the protocol named by mode and
// SIGKILL itself at SESSDB_POINT.
func runOpsChild(mode string) int {
	point := faults.Point(os.Getenv("SESSDB_POINT"))
	now, _ := strconv.ParseInt(os.Getenv("SESSDB_NOW"), 10, 64)
	ready, goOn := os.Getenv("SESSDB_READY"), os.Getenv("SESSDB_GO")
	faults.Set(func(p faults.Point) error {
		// With SESSDB_READY, the reap says when it holds the key's lock
		// before its rename, and waits for SESSDB_GO: the parent lines a
		// promotion up behind the lock meanwhile.
		if p == faults.ReapBeforeRename && ready != "" {
			os.WriteFile(ready, nil, 0o600)
			for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
				if _, err := os.Stat(goOn); err == nil {
					break
				}
			}
		}
		if p == faults.ReapEntry && os.Getenv(entryErrnoEnv) != "" {
			return syscall.ENOSPC // the disk full at the reaping entry's commit
		}
		if p == point {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
		return nil
	})
	s, err := New(os.Getenv("SESSDB_ROOT"), Options{
		Now:    func() time.Time { return time.Unix(0, now) },
		Bounds: gates.Bounds{TTL: opsTTL},
	})
	if err != nil {
		return 1
	}
	if os.Getenv(renameNoSpaceEnv) != "" {
		s.disk = diskWrites{roomless(durable.Disk{})} // the rename refused as on a full disk
	}
	switch mode {
	case "reap-kill-at":
		s.Reap(false)
	case "repair-kill-at":
		s.Check(context.Background(), CheckOptions{Repair: true}, func(Finding) error { return nil })
	}
	return 0
}

// interrupt runs the protocol with a fault at p, either returned as an
// error in this process or as a SIGKILL of a child.
func interrupt(t *testing.T, s *Store, root string, clock *testClock, mode string, p faults.Point, kill bool, run func()) {
	t.Helper()
	if !kill {
		faults.Set(func(q faults.Point) error {
			if q == p {
				return errors.New("injected")
			}
			return nil
		})
		run()
		faults.Set(nil)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+mode, "SESSDB_ROOT="+root, "SESSDB_POINT="+string(p),
		"SESSDB_NOW="+strconv.FormatInt(clock.now.UnixNano(), 10), "TMPDIR="+t.TempDir())
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child was not killed at %s: %v", p, err)
	}
}

// A reap killed (or failing) at each of its steps leaves the expired key
// whole under its name (before the rename) or only a reap-owned dir (after
// it), never a key half gone; check reports the reap-owned dir as a
// problem; and the next reap, or check --repair, finishes the job.
func TestReapInterruptedAtEachPoint(t *testing.T) {
	for i, p := range reapPoints {
		renamed := i >= 2
		for _, kill := range []bool{false, true} {
			t.Run(string(p)+map[bool]string{false: "/error", true: "/kill"}[kill], func(t *testing.T) {
				s, root, clock := newTestStore(t, gates.Bounds{TTL: opsTTL})
				fresh, transcript := expiredBesideFresh(t, s, root, clock)

				interrupt(t, s, root, clock, "reap-kill-at", p, kill, func() { s.Reap(false) })

				// In between, the expired key only ever cold-starts, and
				// the fresh one is untouched.
				sess, _ := checkDescribed(t, s, root, testKey)
				if sess.Resume {
					t.Fatalf("an interrupted reap left a key that resumes")
				}
				got, _ := checkDescribed(t, s, root, fresh)
				want(t, got, true, gates.Resumed)
				aside, _ := filepath.Glob(filepath.Join(root, ReapedPrefix+testKey+"-*"))
				if renamed {
					want(t, sess, false, gates.Absent)
					if len(aside) != 1 {
						t.Fatalf("%d reap-owned dirs after the rename, want 1", len(aside))
					}
					found := checkFindings(t, s, CheckOptions{})
					if len(found) != 1 || found[0].Kind != KindReapInterrupted || found[0].Key != testKey || found[0].Severity != SeverityProblem {
						t.Fatalf("check of what the reap left: %+v", found)
					}
				} else {
					// Whole: the transcript as it was, its record intact.
					want(t, sess, false, gates.Expired)
					if !bytes.Equal(readCanonical(t, root, testKey), transcript) || len(aside) != 0 {
						t.Fatalf("before the rename the key is not whole, or %d reap-owned dirs", len(aside))
					}
				}

				if renamed && kill {
					if _, err := s.Check(context.Background(), CheckOptions{Repair: true}, func(Finding) error { return nil }); err != nil {
						t.Fatal(err)
					}
				} else {
					res, err := s.Reap(false)
					wantRes := slices.Equal(res.Removed, []string{testKey})
					if renamed {
						wantRes = len(res.Finished) == 1 && filepath.Join(root, res.Finished[0]) == aside[0]
					}
					if err != nil || !wantRes || len(res.Skipped) != 0 {
						t.Fatalf("the next reap = %+v, %v; want it to finish %s", res, err, testKey)
					}
				}
				leftOnly(t, root, fresh)
			})
		}
	}
}

func TestRepairInterruptedAtEachPoint(t *testing.T) {
	for _, p := range repairPoints {
		for _, kill := range []bool{false, true} {
			t.Run(string(p)+map[bool]string{false: "/error", true: "/kill"}[kill], func(t *testing.T) {
				s, root, clock := newTestStore(t, gates.Bounds{})
				runJob(t, s, testKey, localJob(), PromoteRequest{}, "x")
				if err := os.Truncate(filepath.Join(root, testKey, db.FileName), 0); err != nil {
					t.Fatal(err)
				}
				repair := func() {
					s.Check(context.Background(), CheckOptions{Repair: true}, func(Finding) error { return nil })
				}
				interrupt(t, s, root, clock, "repair-kill-at", p, kill, repair)

				sess, _ := checkDescribed(t, s, root, testKey)
				if sess.Resume {
					t.Fatal("an interrupted repair left a key that resumes")
				}
				aside, _ := filepath.Glob(filepath.Join(root, testKey, AsidePrefix+"*"))
				_, err := os.Lstat(filepath.Join(root, testKey, db.FileName))
				if moved := os.IsNotExist(err); moved != (len(aside) == 1) || moved != (p == faults.RepairAfterAside) {
					t.Fatalf("at %s: meta.db gone %v, %d aside files", p, moved, len(aside))
				}

				repair()
				if _, err := os.Lstat(filepath.Join(root, testKey, db.FileName)); !os.IsNotExist(err) {
					t.Fatal("the next repair left the damaged meta.db in place")
				}
				aside, _ = filepath.Glob(filepath.Join(root, testKey, AsidePrefix+"*"))
				if len(aside) != 1 {
					t.Fatalf("%d aside files, want exactly the one damaged meta.db, kept", len(aside))
				}
				// The key cold-starts cleanly, and its next promotion lands.
				sess, _ = checkDescribed(t, s, root, testKey)
				if sess.Reason == gates.MetaUnreadable || sess.Resume {
					t.Fatalf("after the repair: %+v", sess)
				}
				runJob(t, s, testKey, localJob(), PromoteRequest{}, "after repair")
				got, _ := checkDescribed(t, s, root, testKey)
				want(t, got, true, gates.Resumed)
			})
		}
	}
}
