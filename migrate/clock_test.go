package migrate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A legacy lock dated in the future (left by a legacy worker that died
// while the host's clock was ahead) keeps its key locked until that date
// is an hour past, and the report says so, and how to end it. Before, it
// said "legacy lock is -24h0m0s old (younger than 1h0m0s)", and that the
// workers should be stopped, which changes nothing.
func TestALockDatedInTheFutureSaysSo(t *testing.T) {
	root, key := oneKey(t)
	lock := filepath.Join(root, key, "lock")
	must(t, os.WriteFile(lock, nil, 0o600))
	at := testNow.Add(24 * time.Hour)
	must(t, os.Chtimes(lock, at, at))
	got, _ := migrate(t, root, false, testOpts())
	r := got[key]
	if r.Action != Locked || strings.Contains(r.Cause, "-24h") || !strings.Contains(r.Cause, "24h0m0s in the future") || !strings.Contains(r.Cause, "remove it") {
		t.Fatalf("a lock dated a day ahead: %+v; want locked, dated 24h0m0s in the future, and how to end it", r)
	}
}
