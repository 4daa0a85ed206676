package fleet

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// An expired key whose own file its removal would be refused (immutable,
// which refuses root too) is kept whole by a reap, dry run and run alike:
// its record and its file stay, the key failed naming the attribute, and
// once the attribute is cleared the next reap removes both. Before, the
// run deleted the record first and then failed the unlink: the key
// reported removed, its file an orphan every later reap failed on until
// chattr -i, while the dry run said the key would be removed.
func TestAReapKeepsWholeAnExpiredKeyWhoseOwnFileItMayNotRemove(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("root is needed for chattr")
	}
	f := newFixture(t, etcdtest.Start1(t))
	key := store.Key("github", "immutable", "expired")
	f.now = time.Now().Add(-30 * 24 * time.Hour)
	f.run(key, "old turn")
	f.now = time.Time{}
	p := filepath.Join(f.dir, f.recordFile(key))
	if out, err := exec.Command("chattr", "+i", p).CombinedOutput(); err != nil {
		t.Skipf("chattr +i %s: %v: %s (ext4, xfs or btrfs is needed)", p, err, out)
	}
	t.Cleanup(func() { exec.Command("chattr", "-i", p).Run() })
	ttl := 14 * 24 * time.Hour
	for _, dry := range []bool{true, false, false} {
		r, err := f.b.Reap(t.Context(), ReapOptions{DryRun: dry, TTL: ttl})
		if err != nil || len(r.Removed) != 0 || len(r.Swept) != 0 || len(r.Skipped) != 1 {
			t.Fatalf("reap (dry %v) = %+v, %v; want the key kept whole and failed", dry, r, err)
		}
		if err := r.Skipped[key]; !errors.Is(err, unix.EPERM) || !strings.Contains(err.Error(), "immutable") {
			t.Errorf("reap (dry %v): %s: %v; want EPERM naming the attribute", dry, key, err)
		}
		st, err := f.b.meta.Get(t.Context(), key)
		if err != nil || st.Rev == 0 {
			t.Fatalf("the key's record after reap (dry %v): rev %d, %v; want it kept", dry, st.Rev, err)
		}
		if _, err := os.Lstat(p); err != nil {
			t.Fatalf("the key's file after reap (dry %v): %v; want it kept", dry, err)
		}
	}
	if out, err := exec.Command("chattr", "-i", p).CombinedOutput(); err != nil {
		t.Fatalf("chattr -i: %v: %s", err, out)
	}
	r, err := f.b.Reap(t.Context(), ReapOptions{TTL: ttl})
	if err != nil || len(r.Removed) != 1 || r.Removed[0] != key || len(r.Skipped) != 0 {
		t.Fatalf("reap once cleared = %+v, %v; want the key removed", r, err)
	}
	if _, err := os.Lstat(p); !os.IsNotExist(err) {
		t.Errorf("the key's file after its reap: %v; want it gone", err)
	}
}
