package migrate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sessdb/internal/testfs"
)

// shmKey is oneKey's root and key on /dev/shm, the tmpfs Linux mounts,
// which keeps any mtime it is given (ext4 clamps to 1901..2038, or to
// 2446 with large inodes).
func shmKey(t *testing.T) (string, string) {
	root := filepath.Join(testfs.TmpfsDir(t), "sessions")
	must(t, osMkdir(root))
	return root, keyNamed(buildCorpus(t, root, "plain"), "plain")
}

// datedLock makes key's legacy lock, dated at.
func datedLock(t *testing.T, root, key string, at time.Time) {
	t.Helper()
	lock := filepath.Join(root, key, "lock")
	must(t, os.WriteFile(lock, nil, 0o600))
	testfs.Date(t, lock, at.Unix())
}

// A legacy lock dated more than 292 years off (a clock gone wrong, or
// touch -d: ext4 with large inodes keeps 2446, tmpfs any date) is told
// in whole days, as every age past what a time.Duration holds is
// (store.RoundAge). Before, its age was time.Sub's clamp: a lock dated
// 2446 was "dated -2562047h47m16.854775808s in the future" (the clamp
// negated past its range), and one dated year 1, removed as stale, was
// "2562047h47m16s old". The days are by Python's datetime.
func TestALockDatedCenturiesOffSaysHowFarInDays(t *testing.T) {
	root, key := shmKey(t)
	datedLock(t, root, key, time.Date(2446, 1, 1, 0, 0, 0, 0, time.UTC))
	got, _ := migrate(t, root, false, testOpts())
	r := got[key]
	if want := "dated 153097d in the future"; r.Action != Locked || !strings.Contains(r.Cause, want) {
		t.Errorf("a lock dated 2446: %+v; want locked, %q", r, want)
	}

	root, key = shmKey(t)
	datedLock(t, root, key, time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC))
	got, _ = migrate(t, root, false, testOpts())
	r = got[key]
	var found string
	for _, o := range r.Oddities {
		if o.File == "lock" {
			found = o.Found
		}
	}
	if want := "739920d old"; r.Action == Locked || !strings.HasSuffix(found, want) {
		t.Errorf("a lock dated year 1: action %s, the lock's oddity %q; want it removed as stale, %q", r.Action, found, want)
	}
}
