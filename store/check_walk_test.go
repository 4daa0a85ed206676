package store

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/faults"
	"sessdb/internal/fsat"
)

// swapInWalk is a context whose Err, the first time findLinksBelow asks
// it, runs swap: the walk of an odd directory then meets a name changed
// under it at a point it reaches every time, with no clock involved.
type swapInWalk struct {
	context.Context
	once  sync.Once
	fired bool
	swap  func()
}

func (c *swapInWalk) Err() error {
	pcs := make([]uintptr, 32)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	for {
		f, more := frames.Next()
		if strings.Contains(f.Function, "findLinksBelow") {
			c.once.Do(func() { c.swap(); c.fired = true })
			break
		}
		if !more {
			break
		}
	}
	return c.Context.Err()
}

// An odd directory under the root (not a key: a job dir someone put
// there, whose session/ a container writes) or inside a key dir, swapped
// for a link to a directory outside the root while check walks it: the
// walk never lists the link's target. It did: the walk went by path from
// the root, so a directory replaced by a link after its lstat was read
// through the link (and one replaced by a FIFO hung the walk for good,
// the open of a FIFO for reading waiting on a writer).
func TestCheckWalkNeverFollowsADirSwappedForALink(t *testing.T) {
	for _, c := range []struct {
		name string
		dir  func(root, key string) string // the odd dir walked
	}{
		{"not a key", func(root, _ string) string { return filepath.Join(root, "jobs") }},
		{"in a key dir", func(root, key string) string { return filepath.Join(root, key, "odd") }},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, root, _ := newTestStore(t, gates.Bounds{})
			key := chkKey(t, s, "walk")
			dir := c.dir(root, key)
			if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o700); err != nil {
				t.Fatal(err)
			}
			outside := t.TempDir()
			if err := os.Symlink("/", filepath.Join(outside, "planted")); err != nil {
				t.Fatal(err)
			}
			ctx := &swapInWalk{Context: context.Background(), swap: func() {
				if err := os.Rename(dir, filepath.Join(t.TempDir(), "moved")); err != nil {
					t.Error(err)
				}
				if err := os.Symlink(outside, dir); err != nil {
					t.Error(err)
				}
			}}
			var found []Finding
			if _, err := s.Check(ctx, CheckOptions{}, func(f Finding) error { found = append(found, f); return nil }); err != nil {
				t.Fatal(err)
			}
			if !ctx.fired {
				t.Fatal("the walk below the odd dir never asked its context")
			}
			for _, f := range found {
				if strings.Contains(f.Path, "planted") {
					t.Fatalf("check listed %s, which is outside the root, through the link: %+v", f.Path, f)
				}
			}
		})
	}
}

// A check --repair whose context ends after it moved a damaged meta.db
// aside, before its second look at the key, must still report the move:
// the walk stops, but what it did is in the findings and the summary.
func TestRepairInterruptedAfterActingReportsWhatItDid(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "x")
	if err := os.Truncate(filepath.Join(root, testKey, db.FileName), 0); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	faults.Set(func(p faults.Point) error {
		if p == faults.RepairAfterAside {
			cancel() // the operator's interrupt, once the move is done
		}
		return nil
	})
	t.Cleanup(func() { faults.Set(nil) })
	var repaired []Finding
	sum, err := s.Check(ctx, CheckOptions{Repair: true}, func(f Finding) error {
		if f.Repaired {
			repaired = append(repaired, f)
		}
		return nil
	})
	faults.Set(nil)
	aside, _ := filepath.Glob(filepath.Join(root, testKey, AsidePrefix+"*"))
	if len(aside) != 1 {
		t.Fatalf("%d aside files; the test needs the move to have happened", len(aside))
	}
	if err == nil {
		t.Fatal("Check did not say it was interrupted")
	}
	if len(repaired) != 1 || sum.Repaired != 1 {
		t.Fatalf("meta.db moved aside, but %d repaired findings reported, summary %+v (err %v)", len(repaired), sum, err)
	}
}

// A tree under an odd directory deeper than PATH_MAX: the walk stops
// there, as it must (such a path cannot be named), but check says so: a
// link below that depth was hidden from it without a word before.
func TestCheckSaysWhereItStoppedAtPathMax(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	if err := os.MkdirAll(root, 0o700); err != nil {
		t.Fatal(err)
	}
	d, err := fsat.OpenDir(root)
	if err != nil {
		t.Fatal(err)
	}
	name := "deep"
	for depth := 0; ; depth++ {
		if err := fsat.MkdirAt(d, name, 0o700); err != nil {
			t.Fatal(err)
		}
		next, err := fsat.OpenDirAt(d, name)
		d.Close()
		if err != nil {
			t.Fatal(err)
		}
		d = next
		if depth == 20 { // 4 + 20*251 bytes: past PATH_MAX
			break
		}
		name = strings.Repeat("d", 250)
	}
	if err := unix.Symlinkat("/", int(d.Fd()), "planted"); err != nil {
		t.Fatal(err)
	}
	d.Close()
	var below []Finding
	if _, err := s.Check(context.Background(), CheckOptions{}, func(f Finding) error {
		if strings.HasPrefix(f.Path, "deep/") {
			below = append(below, f)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(below) != 1 || below[0].Kind != KindUnreadable || !strings.Contains(below[0].Detail, "PATH_MAX") {
		t.Fatalf("findings below deep/: %+v; want one saying where the walk stopped", below)
	}
}

// A key dir a reap removes while check reads it (a damaged meta.db holds
// no lock for check, so the reap is not kept waiting): check says nothing
// of it, as of a name removed since the listing. It said "unreadable: an
// I/O error; look at the disk", a problem (exit 3) for a routine reap.
func TestCheckOfAKeyReapedUnderItIsNoIOError(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	key := chkKey(t, s, "reaped")
	if err := os.Truncate(chkDB(root, key), 0); err != nil {
		t.Fatal(err)
	}
	fired := false
	faults.Set(func(p faults.Point) error {
		if p == faults.CheckAfterKeyOpen && !fired {
			fired = true
			// What reap does: the dir renamed to a reap-owned name, its
			// entries removed, the dir removed.
			if err := os.RemoveAll(filepath.Join(root, key)); err != nil {
				t.Error(err)
			}
		}
		return nil
	})
	t.Cleanup(func() { faults.Set(nil) })
	var found []Finding
	sum, err := s.Check(context.Background(), CheckOptions{}, func(f Finding) error { found = append(found, f); return nil })
	faults.Set(nil)
	if err != nil || !fired {
		t.Fatalf("check: %v (hook fired: %v)", err, fired)
	}
	if len(found) != 0 || sum.Problems != 0 {
		t.Fatalf("a key removed under the check: %+v, summary %+v", found, sum)
	}
}

// A directory below an odd one that cannot be opened or listed (here: no
// descriptor left, as a deep tree walked by many workers can cause; for
// another user, a permission) is reported unreadable: the walk skipped it
// in silence, and a link below it was hidden from the check.
func TestCheckSaysWhatItCouldNotWalk(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	deep := filepath.Join(root, "odd", "a", "b")
	if err := os.MkdirAll(deep, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/", filepath.Join(deep, "planted")); err != nil {
		t.Fatal(err)
	}
	// Use up every descriptor, then free three: the root, "odd" and its
	// listing. "a" opens, and its listing finds none left.
	var fill []int
	t.Cleanup(func() {
		for _, fd := range fill {
			unix.Close(fd)
		}
	})
	for {
		fd, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err == unix.EMFILE {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		fill = append(fill, fd)
	}
	if len(fill) < 3 {
		t.Skip("too few descriptors to free three")
	}
	for range 3 {
		unix.Close(fill[len(fill)-1])
		fill = fill[:len(fill)-1]
	}
	var found []Finding
	_, err := s.Check(context.Background(), CheckOptions{Workers: 1}, func(f Finding) error { found = append(found, f); return nil })
	for _, fd := range fill {
		unix.Close(fd)
	}
	fill = nil
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		if strings.HasPrefix(f.Path, "odd/") {
			return // the link, or where the walk could not go
		}
	}
	t.Fatalf("nothing said below odd/: %+v", found)
}
