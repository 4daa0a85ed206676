package shared

import (
	"errors"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// DirErr asks the server, not the client's attribute cache: an export
// gone stale answers a plain stat of the mount's root from the cache for
// up to a minute (here: the dir is there for os.Stat) while the server
// answers ESTALE (the stand-in's statx), and the dir is then unavailable.
// Before: DirErr's plain stat said the dir was fine, and every key whose
// generation's open failed ESTALE in that minute was transcript-replaced
// (dump, check: missing). A kernel without statx leaves the plain stat's
// answer; a real statx of a dir that is there finds nothing wrong.
func TestDirErrAsksTheServerNotTheCache(t *testing.T) {
	dir := t.TempDir()
	if err := DirErr(dir); err != nil {
		t.Fatalf("DirErr of a dir that is there: %v", err)
	}
	defer func() { statx = unix.Statx }()
	var flags, mask int
	statx = func(_ int, _ string, f, m int, _ *unix.Statx_t) error {
		flags, mask = f, m
		return unix.ESTALE
	}
	err := DirErr(dir)
	if !errors.Is(err, ErrDirUnavailable) || !errors.Is(err, unix.ESTALE) || !strings.Contains(err.Error(), dir) {
		t.Errorf("DirErr = %v; want the dir unavailable, stale", err)
	}
	if flags&unix.AT_STATX_FORCE_SYNC == 0 || mask&unix.STATX_MODE == 0 {
		t.Errorf("statx flags %#x, mask %#x; want AT_STATX_FORCE_SYNC, and the mode (which NFS revalidates)", flags, mask)
	}
	statx = func(int, string, int, int, *unix.Statx_t) error { return unix.ENOSYS }
	if err := DirErr(dir); err != nil {
		t.Errorf("DirErr without statx = %v; want the plain stat's answer", err)
	}
}
