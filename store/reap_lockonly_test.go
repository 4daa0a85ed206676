package store

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/durable"
	"sessdb/internal/faults"
)

// A first promotion killed before its commit leaves its key dir with a
// meta.db that holds nothing (its lock) and its staged temp. Reap keeps
// such a key while it is young, and sweeps its temp once stale; once the
// dir and its meta.db have been idle past the TTL, the key, which holds
// nothing, goes whole, as an expired key does; check then finds nothing,
// and the key's next promotion lands. Before, reap judged it by its
// transcript's mtime, which it has not: at every reap the key was
// skipped with "lstat <key>/current.jsonl: no such file or directory",
// counted neither kept nor failed, its temp never swept, and the dir
// stayed for ever.
func TestReapKeepsAKeyAFirstPromotionDiedInAndSweepsItsTemp(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{TTL: 24 * time.Hour})
	key := testKey
	cmd, _ := startChild(t, "kill-at", "SESSDB_ROOT="+root, "SESSDB_KEY="+key, "SESSDB_POINT="+string(faults.PromoteAfterTempSync), "SESSDB_MARKER=killed")
	var ee *exec.ExitError
	if err := cmd.Wait(); !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the first promotion was not killed: %v", err)
	}
	kd := filepath.Join(root, key)
	names := dirNames(t, kd)
	if len(names) != 2 || !strings.HasPrefix(names[0], tmpPrefix) || names[1] != "meta.db" {
		t.Fatalf("the key dir holds %v; want the killed promotion's temp and its meta.db", names)
	}
	temp := names[0]
	if sc := sidecarsOf(t, root, key); sc != (db.Sidecars{}) {
		t.Fatalf("the killed promotion's meta.db holds %+v", sc)
	}
	// Killed two hours ago, by the store's clock.
	old := clock.now.Add(-2 * time.Hour)
	for _, p := range []string{filepath.Join(kd, temp), filepath.Join(kd, "meta.db"), kd} {
		os.Chtimes(p, old, old)
	}

	for _, dry := range []bool{true, false} {
		r, err := s.Reap(dry)
		if err != nil || r.Kept != 1 || len(r.Skipped) != 0 || len(r.Removed) != 0 || !slices.Equal(r.Swept, []string{key + "/" + temp}) {
			t.Fatalf("reap (dry run %v) = %+v, %v; want the key kept, its temp swept", dry, r, err)
		}
	}
	if names := dirNames(t, kd); !slices.Equal(names, []string{"meta.db"}) {
		t.Fatalf("after the reap the key dir holds %v; want its meta.db alone", names)
	}
	os.Chtimes(kd, old, old) // the sweep's unlink changed it

	clock.now = old.Add(24*time.Hour + time.Minute)
	for _, dry := range []bool{true, false} {
		r, err := s.Reap(dry)
		if err != nil || r.Kept != 0 || len(r.Skipped) != 0 || !slices.Equal(r.Removed, []string{key}) {
			t.Fatalf("reap idle past the TTL (dry run %v) = %+v, %v; want the key removed", dry, r, err)
		}
	}
	if left, _ := os.ReadDir(root); len(left) != 0 {
		t.Fatalf("left under the root: %v", left)
	}
	if found := checkFindings(t, s, CheckOptions{}); len(found) != 0 {
		t.Fatalf("check after the reap: %+v", found)
	}
	runJob(t, s, key, localJob(), PromoteRequest{}, "again")
	got, _ := checkDescribed(t, s, root, key)
	want(t, got, true, gates.Resumed)
}

// A key with no record and no transcript whose meta.db holds anything a
// resolve or a later promotion could read (here a refusal in its history)
// is kept however long idle: only a key that holds nothing goes.
func TestReapKeepsAKeyWithNoTranscriptWhoseMetaDBHoldsSomething(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{TTL: 24 * time.Hour})
	kd := filepath.Join(root, testKey)
	if err := os.MkdirAll(kd, 0o700); err != nil {
		t.Fatal(err)
	}
	dir, err := os.Open(kd)
	if err != nil {
		t.Fatal(err)
	}
	d, _, err := db.OpenSidecars(dir, db.Options{}, true)
	if err == nil {
		err = d.Update(func(tx *db.Tx) error {
			_, err := tx.AppendHistory(db.HistoryEntry{Gen: 1, Outcome: string(gates.Superseded)})
			return err
		})
		d.Close()
	}
	dir.Close()
	if err != nil {
		t.Fatal(err)
	}
	old := clock.now.Add(-30 * 24 * time.Hour)
	os.Chtimes(filepath.Join(kd, "meta.db"), old, old)
	os.Chtimes(kd, old, old)
	r, err := s.ReapWith(context.Background(), ReapOptions{})
	if err != nil || r.Kept != 1 || len(r.Removed) != 0 || len(r.Skipped) != 0 {
		t.Fatalf("reap = %+v, %v; want the key kept", r, err)
	}
	if names := dirNames(t, kd); !slices.Equal(names, []string{"meta.db"}) {
		t.Fatalf("the key dir holds %v after the reap", names)
	}
}

// A reap removing a legacy key in place (a full disk refused its rename)
// that stops after the transcript leaves the key cold, with the meta.db
// it made for the lock and the legacy sidecars; once that is idle past
// the TTL, the next reap removes it whole. Before, every reap skipped it
// ("lstat …/current.jsonl: no such file or directory") and it stayed for
// ever, check saying nothing of it.
func TestALegacyKeyReapedInPlaceAndStoppedIsRemovedByALaterReap(t *testing.T) {
	for _, kill := range []bool{false, true} {
		t.Run(map[bool]string{false: "error", true: "kill"}[kill], func(t *testing.T) {
			s, root, clock := newTestStore(t, gates.Bounds{TTL: opsTTL})
			fresh := Key("github", "a/b", "fresh")
			runJob(t, s, fresh, localJob(), PromoteRequest{}, "fresh")
			writeLegacy(t, root, testKey, map[string]string{TranscriptName: string(transcriptBytes(clock.now)), "venue": "local\n"})
			old := clock.now.Add(-30 * 24 * time.Hour)
			os.Chtimes(filepath.Join(root, testKey, TranscriptName), old, old)
			if kill {
				t.Setenv(renameNoSpaceEnv, "1")
				interrupt(t, s, root, clock, "reap-kill-at", faults.ReapAfterTranscript, true, func() {})
			} else {
				s.disk = diskWrites{roomless(durable.Disk{})}
				interrupt(t, s, root, clock, "", faults.ReapAfterTranscript, false, func() {
					if res, _ := s.Reap(false); !slices.Equal(res.Failed, []string{testKey}) {
						t.Errorf("reap stopped in place = %+v; want %s failed", res, testKey)
					}
				})
				s.disk = diskWrites{}
			}
			kd := filepath.Join(root, testKey)
			if names := dirNames(t, kd); !slices.Equal(names, []string{"meta.db", "venue"}) {
				t.Fatalf("the key dir holds %v; want the reap's meta.db and the venue", names)
			}
			sess, _ := checkDescribed(t, s, root, testKey)
			want(t, sess, false, gates.Absent)
			for _, p := range []string{filepath.Join(kd, "meta.db"), filepath.Join(kd, "venue"), kd} {
				os.Chtimes(p, clock.now, clock.now)
			}
			// Young, it is kept.
			if r, err := s.Reap(false); err != nil || r.Kept != 2 || len(r.Removed) != 0 || len(r.Skipped) != 0 {
				t.Fatalf("the next reap = %+v, %v; want both keys kept", r, err)
			}
			clock.now = clock.now.Add(opsTTL + time.Minute)
			runJob(t, s, fresh, localJob(), PromoteRequest{}, "fresh again")
			r, err := s.Reap(false)
			if err != nil || !slices.Equal(r.Removed, []string{testKey}) || len(r.Skipped) != 0 {
				t.Fatalf("the reap past the TTL = %+v, %v; want %s removed", r, err, testKey)
			}
			leftOnly(t, root, fresh)
		})
	}
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// A key that holds nothing, judged idle past the TTL by reap's first
// look, into which a promotion lands before reap has its lock: judged
// again under the lock, it is kept, and the promotion resumes.
func TestReapKeepsAPromotionThatLandsInADeadKeyAfterItsLook(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{TTL: 24 * time.Hour})
	kd := filepath.Join(root, testKey)
	if err := os.MkdirAll(kd, 0o700); err != nil {
		t.Fatal(err)
	}
	dir, err := os.Open(kd)
	if err != nil {
		t.Fatal(err)
	}
	d, _, err := db.OpenSidecars(dir, db.Options{}, true) // a killed first promotion's lock
	dir.Close()
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	old := clock.now.Add(-30 * 24 * time.Hour)
	os.Chtimes(filepath.Join(kd, "meta.db"), old, old)
	os.Chtimes(kd, old, old)
	landed := false
	faults.Set(func(p faults.Point) error {
		if p == faults.ReapBeforeLock && !landed {
			landed = true
			faults.Set(nil)
			runJob(t, s, testKey, localJob(), PromoteRequest{}, "landed")
		}
		return nil
	})
	defer faults.Set(nil)
	r, err := s.Reap(false)
	if !landed {
		t.Fatal("reap never went for the lock: it did not judge the key dead")
	}
	if err != nil || r.Kept != 1 || len(r.Removed) != 0 || len(r.Skipped) != 0 {
		t.Fatalf("reap = %+v, %v; want the key kept", r, err)
	}
	got, _ := checkDescribed(t, s, root, testKey)
	want(t, got, true, gates.Resumed)
}
