package store

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/faults"
	"sessdb/internal/fsat"
)

// dump during a reap: the reap-owned dir of a reap at work (renamed aside
// under the key's lock, being emptied) is no interrupted reap. dump said
// "interrupted reap of key K: run sessdb check" for it, and the check it
// sent the operator to found nothing: check waits for the dir's lock and
// looks again, and so does dump now. A dir a killed reap left is still
// named so (TestDumpNamesAReapKilledBeforeItsRmdir).
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

// A reap killed after it removed the reap-owned dir's meta.db, before its
// rmdir, left the dir: dump, which waited for that meta.db's lock and
// found it gone, looks again and still names it an interrupted reap (as
// check does): the key is gone, and only check or reap finish it.
func TestDumpNamesAReapKilledBeforeItsRmdir(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "turn")
	aside := filepath.Join(root, newReapedName(testKey))
	if err := os.Rename(filepath.Join(root, testKey), aside); err != nil {
		t.Fatal(err)
	}
	dir, err := fsat.OpenDir(aside)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	d, err := db.OpenWriter(dir, db.FileName, db.Options{}) // the reap's lock
	if err != nil {
		t.Fatal(err)
	}
	dumped, release := make(chan struct{}), make(chan struct{})
	var reports []KeyReport
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
	<-release
	// The reap removes what is in the dir, meta.db last, and is killed.
	names, _ := os.ReadDir(aside)
	for _, n := range names {
		if n.Name() != db.FileName {
			os.Remove(filepath.Join(aside, n.Name()))
		}
	}
	if err := os.Remove(filepath.Join(aside, db.FileName)); err != nil {
		t.Fatal(err)
	}
	d.Close()
	<-dumped
	want := "interrupted reap of key " + testKey + ": run sessdb check"
	if len(reports) != 1 || reports[0].Problem != want {
		t.Errorf("dump of a reap-owned dir a killed reap left: %+v\nwant the problem %q", reports, want)
	}
}
