package store

import (
	"context"
	"strings"
	"sync"
	"testing"

	"sessdb/gates"
	"sessdb/internal/faults"
)

// dump during a reap: the reap-owned dir of a reap at work (renamed aside
// under the key's lock, being emptied) is no interrupted reap. dump said
// "interrupted reap of key K: run sessdb check" for it, and the check it
// sent the operator to found nothing: check waits for the dir's lock and
// looks again, and so does dump now. A dir a killed reap left is still
// named so (TestInspectNamesTheOwnedDirs... and the JSON reference).
func TestDumpDuringAReapReportsNoInterruptedReap(t *testing.T) {
	s, _, clock := newTestStore(t, gates.Bounds{TTL: opsTTL})
	expiredKey(t, s, clock, testKey)
	dumped, release := make(chan struct{}), make(chan struct{})
	var reports []KeyReport
	var once sync.Once
	faults.Set(func(p faults.Point) error {
		if p == faults.ReapAfterTranscript {
			once.Do(func() {
				go func() {
					defer close(dumped)
					err := s.InspectWith(context.Background(), InspectOptions{}, func(r KeyReport) error {
						reports = append(reports, r)
						return nil
					})
					if err != nil {
						t.Error(err)
					}
				}()
				go releaseWhenWaitingIn("(*Store).inspectKey", dumped, release)
				<-release // the dump waits for the lock the reap holds, or is done
			})
		}
		return nil
	})
	t.Cleanup(func() { faults.Set(nil) })
	res, err := s.Reap(false)
	if err != nil || len(res.Removed) != 1 {
		t.Fatalf("reap: %+v, %v", res, err)
	}
	<-dumped
	if len(reports) == 0 {
		t.Fatal("the dump during the reap listed nothing: the reap-owned dir was not under the root")
	}
	for _, r := range reports {
		if strings.Contains(r.Problem, "interrupted reap") {
			t.Errorf("dump during a reap: %s: %s", r.Name, r.Problem)
		}
	}
}
