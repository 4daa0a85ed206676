package store

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/durable/durabletest"
)

// check --repair and reap's sweep remove a meta.db temp they took for
// debris with its flock held, so that a creator stalled between the
// temp's create and its flock, who asks for that flock meanwhile, waits
// until the name is gone and then makes its temp again (db.TakeTemp).
// Let go before the removal, the flock was the creator's to take an
// instant before its name went, and its link then found no temp: the
// creation failed, a promotion's promote-failed.
func TestATempTakenForDebrisIsRemovedWithItsFlockHeld(t *testing.T) {
	for _, by := range []string{"check --repair", "reap's sweep"} {
		t.Run(by, func(t *testing.T) {
			s, root, clock := newTestStore(t, gates.Bounds{})
			key := chkKey(t, s, "taken "+by)
			name := db.TempPrefix + "00000000000000f1"
			p := filepath.Join(root, key, name)
			if err := os.WriteFile(p, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			old := time.Now().Add(-time.Hour) // older than a creator waits for its flock
			if by == "reap's sweep" {
				old = clock.now.Add(-2 * StaleTempAge)
			}
			if err := os.Chtimes(p, old, old); err != nil {
				t.Fatal(err)
			}
			seen := &durabletest.FlockSeen{}
			s.disk = diskWrites{durabletest.FlockAtRemoval{Name: name, Seen: seen}}
			if by == "check --repair" {
				checkFindings(t, s, CheckOptions{Repair: true})
			} else if _, err := s.Reap(false); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Lstat(p); !os.IsNotExist(err) {
				t.Fatalf("the stray meta.db temp after %s: %v; want it removed", by, err)
			}
			if !seen.Asked {
				t.Fatalf("%s removed the temp, but not through the store's disk", by)
			}
			if seen.Free {
				t.Errorf("%s removed the temp with its flock free for a creator to take", by)
			}
		})
	}
}
