package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"sessdb/db"
	"sessdb/internal/faults"
)

// hideFirstLook makes key look as a key dir its owner may not enter does
// to check's first look (a mode finding, nothing inside seen): the key
// dir 0600, and the first listing of it failing. Root, who runs these
// tests, enters any dir, so the fault stands for the refusal; at every
// later look after the listing it calls after.
func hideFirstLook(t *testing.T, root, key string, after func()) {
	t.Helper()
	if err := os.Chmod(filepath.Join(root, key), 0o600); err != nil {
		t.Fatal(err)
	}
	listed := 0
	faults.Set(func(p faults.Point) error {
		if p != faults.CheckAfterKeyListed {
			return nil
		}
		if listed++; listed == 1 {
			return errors.New("permission denied")
		}
		after()
		return nil
	})
	t.Cleanup(func() { faults.Set(nil) })
}

// An interrupt that ends the look after a mode repair, with what the
// mode hid in hand, starts nothing more: cli.md's "nothing new is
// started" once Ctrl-C came. The stray temp the look found is still
// there, for the next run; the mode repair made before the interrupt is
// reported.
func TestAnInterruptedLookAfterAModeRepairRepairsNothingMore(t *testing.T) {
	needRoot(t)
	s, root := workersStore(t)
	key := chkKey(t, s, "interrupted")
	stray := filepath.Join(root, key, tmpPrefix+"stray")
	must(t, os.WriteFile(stray, []byte("debris"), 0o600))
	must(t, os.Chown(stray, worker, worker))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hideFirstLook(t, root, key, cancel)
	var found []Finding
	deep := func(_ context.Context, key string) (DeepResult, error) { return s.DeepCheckDB(key), nil }
	_, err := s.Check(ctx, CheckOptions{Repair: true, DeepCheck: deep}, func(f Finding) error {
		found = append(found, f)
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("check --repair interrupted in the look after its repair: %v; want the interrupt", err)
	}
	if f := chkFind(found, key, KindMode); f == nil || !f.Repaired {
		t.Errorf("the mode repaired before the interrupt: %+v; want it reported", found)
	}
	if _, err := os.Lstat(stray); err != nil {
		t.Errorf("the stray temp the interrupted look found: %v; want it left for the next run", err)
	}
}

// A repair of what a mode hid that writes meta.db (a hidden promotion in
// flight, rolled forward) makes the deep check's verdict one about
// another file: the look after it checks meta.db again, as the look after
// any repair that wrote it does. Kept, the verdict reported would be the
// one taken before the roll-forward's commit.
func TestTheLookAfterAHiddenRollForwardChecksMetaDBAgain(t *testing.T) {
	needRoot(t)
	s, root := workersStore(t)
	key := chkKey(t, s, "hiddenpending")
	commitWithoutRenameAt(t, s, root, key)
	hideFirstLook(t, root, key, func() {})
	var pendingSeen []bool // at each deep check: a promotion still pending in meta.db
	deep := func(_ context.Context, key string) (DeepResult, error) {
		withDB(t, root, key, func(tx *db.Tx) error {
			sc, err := tx.Sidecars()
			pendingSeen = append(pendingSeen, sc.Pending != nil && pendingInFlightByName(t, root, key, sc.Pending.Tmp))
			return err
		})
		return s.DeepCheckDB(key), nil
	}
	found := checkFindings(t, s, CheckOptions{Repair: true, DeepCheck: deep})
	if f := chkFind(found, key+"/"+db.FileName, KindPendingPromotion); f == nil || !f.Repaired {
		t.Fatalf("the hidden promotion: %+v; want it rolled forward in this run", found)
	}
	if n := len(pendingSeen); n == 0 || pendingSeen[n-1] {
		t.Errorf("deep checks, each seeing a promotion in flight or not: %v; want the last one after the roll-forward", pendingSeen)
	}
}

// pendingInFlightByName reports whether tmp is still at its name in key.
func pendingInFlightByName(t *testing.T, root, key, tmp string) bool {
	t.Helper()
	_, err := os.Lstat(filepath.Join(root, key, tmp))
	return err == nil
}

// The repair of what a mode hid (check's second repair, of findings the
// first one uncovered) takes the check's ctx as the first does: stopped as
// the hidden promotion's roll-forward reads its temp, nothing is renamed,
// the finding is not repaired, and the check ends with the interrupt.
// Given context.Background() (mutlate49's S6), the roll-forward read on,
// renamed the temp and reported it rolled forward.
func TestAnInterruptAtAHiddenRollForwardRenamesNothing(t *testing.T) {
	needRoot(t)
	s, root := workersStore(t)
	key := chkKey(t, s, "hiddencut")
	temp := commitWithoutRenameAt(t, s, root, key)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// hideFirstLook's key dir, and a stop at the roll-forward's read.
	must(t, os.Chmod(filepath.Join(root, key), 0o600))
	listed, reads := 0, 0
	faults.Set(func(p faults.Point) error {
		switch {
		case p == faults.CheckAfterKeyListed:
			if listed++; listed == 1 {
				return errors.New("permission denied")
			}
		case p == faults.RollForwardTempRead:
			reads++
			cancel()
		}
		return nil
	})
	t.Cleanup(func() { faults.Set(nil) })
	var found []Finding
	_, err := s.Check(ctx, CheckOptions{Repair: true}, func(f Finding) error { found = append(found, f); return nil })
	faults.Set(nil)
	if reads != 1 || !errors.Is(err, context.Canceled) {
		t.Fatalf("check --repair interrupted at the hidden promotion's roll-forward (%d reads): %v; want the interrupt", reads, err)
	}
	if f := chkFind(found, key+"/"+db.FileName, KindPendingPromotion); f == nil || f.Repaired {
		t.Errorf("the hidden promotion the interrupt cut: %+v; want it found, not repaired", found)
	}
	if !pendingInFlightByName(t, root, key, filepath.Base(temp)) {
		t.Errorf("the hidden promotion's temp after the interrupt: gone; want it left at its name")
	}
}
