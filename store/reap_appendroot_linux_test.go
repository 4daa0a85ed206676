package store

import (
	"errors"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"sessdb/gates"
)

// An expired key under a sessions root that is append-only (chattr +a:
// nothing in it may be renamed or removed, root's run too) is failed by
// the dry run as by the run, which meets it at the rename aside: the key
// stays at its name. removable asks the removal of the key dir itself,
// after its entries; a removable that stopped at the entries survived
// every test (mutnew47's A24): the dry run said it would remove the key,
// exit 0, where the run failed it.
func TestAReapUnderAnAppendOnlyRootFailsTheKeyDryRunAndRunAlike(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{TTL: opsTTL})
	expiredKey(t, s, clock, testKey)
	chattr(t, "+a", root)
	t.Cleanup(func() { exec.Command("chattr", "-a", root).Run() })
	for _, dry := range []bool{true, false} {
		res, err := s.Reap(dry)
		if err != nil || len(res.Removed) != 0 || !slices.Equal(res.Failed, []string{testKey}) || !errors.Is(res.Causes[testKey], unix.EPERM) {
			t.Fatalf("reap (dry %v) = %+v, %v; want the key failed, EPERM", dry, res, err)
		}
		if dry && !strings.Contains(res.Skipped[testKey], "append-only") {
			t.Errorf("the dry run's cause %q names no append-only dir", res.Skipped[testKey])
		}
	}
	chattr(t, "-a", root)
	if res, err := s.Reap(false); err != nil || !slices.Equal(res.Removed, []string{testKey}) {
		t.Fatalf("reap once the attribute is cleared = %+v, %v", res, err)
	}
}
