package store

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sessdb/gates"
)

// A legacy lock dated in the future (a legacy worker whose clock was
// ahead) stays fresh for migrate until an hour after its date, and
// stopping the legacy workers does not end it: migrate's locked cause
// says so, and to remove it by hand once no legacy worker runs. check's
// legacy-leftover notice said such a lock was a worker promoting the key
// now or one that died "within the hour", and that migrate skips the key
// "until the lock is an hour old": an operator who waited the hour found
// the key locked still, two days on for a lock two days ahead.
func TestCheckSaysALegacyLockDatedInTheFutureStaysLockedUntilAnHourPastItsDate(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{})
	key := Key("github", "legacy/leftover", "a lock from a clock ahead")
	writeLegacy(t, root, key, map[string]string{TranscriptName: string(transcriptBytes(clock.now, "legacy")), "pi-version": testPi, "lock": ""})
	when := clock.now.Add(49 * time.Hour)
	if err := os.Chtimes(filepath.Join(root, key, "lock"), when, when); err != nil {
		t.Fatal(err)
	}
	for _, repair := range []bool{false, true} {
		found, _ := chkRun(t, s, repair)
		f := chkFind(found, key+"/lock", KindLegacyLeftover)
		if f == nil {
			t.Fatalf("check (repair %v): no legacy-leftover for the lock; found %+v", repair, found)
		}
		for _, says := range []string{"dated 2d in the future", "until an hour after that date", "remove it by hand once no legacy worker runs"} {
			if !strings.Contains(f.Detail, says) {
				t.Errorf("check (repair %v) of a lock dated 49h ahead: %q; want it to say %q", repair, f.Detail, says)
			}
		}
		for _, not := range []string{"within the hour", "until the lock is an hour old"} {
			if strings.Contains(f.Detail, not) {
				t.Errorf("check (repair %v) of a lock dated 49h ahead: %q; it says %q, which waiting does not make true", repair, f.Detail, not)
			}
		}
		if f.Severity != SeverityNotice || f.Repair != "" || f.Repaired {
			t.Errorf("check (repair %v): %+v; want a notice, no repair", repair, *f)
		}
	}
}
