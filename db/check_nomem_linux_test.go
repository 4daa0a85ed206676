package db

import (
	"bufio"
	"errors"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// vmSize is the process's address space now, in bytes (VmSize).
func vmSize(t *testing.T) uint64 {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmSize:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Skip("no VmSize in /proc/self/status")
	return 0
}

// A deep check that cannot map its copy of the file (no address space
// left: RLIMIT_AS, which the check process inherits) proves nothing about
// the file: that is the mapping's error, not damage. Check took every
// error of bbolt's open of the copy for damage, and the healthy file's
// deep check said "damaged database: bbolt: cannot allocate memory", a
// proven meta-check-failed that check --repair acts on by moving meta.db
// aside (the key cold-starts until its next promotion, which replaces the
// conversation).
func TestCheckWithoutAddressSpaceToMapTheCopyIsNoDamage(t *testing.T) {
	kd := newKeyDir(t)
	w, err := OpenWriter(kd.dir, kd.db, testOpts)
	if err != nil {
		t.Fatal(err)
	}
	// A file read whole into a snapshot, whose copy bbolt maps in 1 MiB.
	if err := w.Update(func(tx *Tx) error { return tx.PutPiVersion(strings.Repeat("v", 768<<10)) }); err != nil {
		t.Fatal(err)
	}
	w.Close()
	r, err := OpenReader(kd.dir, kd.db, testOpts)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()

	var old unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_AS, &old); err != nil {
		t.Fatal(err)
	}
	defer debug.SetGCPercent(debug.SetGCPercent(-1)) // no heap growth in the window
	runtime.GC()
	low := old
	low.Cur = vmSize(t) + 256<<10 // less than the copy's mapping
	if low.Cur >= old.Cur {
		t.Skipf("RLIMIT_AS %d is already below the process's size", old.Cur)
	}
	if err := unix.Setrlimit(unix.RLIMIT_AS, &low); err != nil {
		t.Skipf("setrlimit: %v", err)
	}
	problems, err := r.Check(20)
	if err := unix.Setrlimit(unix.RLIMIT_AS, &old); err != nil {
		t.Fatal(err)
	}
	if len(problems) > 0 || errors.Is(err, ErrDamaged) || !errors.Is(err, unix.ENOMEM) {
		t.Fatalf("the check with no address space to map the copy = %q, %v; want ENOMEM, no damage", problems, err)
	}
	if problems, err := r.Check(20); len(problems) > 0 || err != nil {
		t.Fatalf("the check = %q, %v; want a consistent file", problems, err)
	}
}
