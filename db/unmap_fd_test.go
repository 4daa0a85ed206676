package db

import (
	"errors"
	"runtime/debug"
	"testing"
)

// Closing a handle poisoned by a bbolt panic leaves no descriptor open
// (unmapPoisoned reads /proc/self/maps to find the mapping's length): a
// long-running reader of a file another process keeps damaging poisons
// many handles.
func TestAPoisonedCloseLeavesNoDescriptorOpen(t *testing.T) {
	inChild(t, func(t *testing.T) {
		kd := makeDB(t, HistoryLimit)
		off := bucketPage(t, kd.db, bucketHistory, leafFlag)
		writeAt(t, kd.db, off+8, []byte{0, 0}) // a leaf that is no page type at all
		testSkipWalk = true                    // so that bbolt, not the pre-check, meets it
		defer func() { testSkipWalk = false }()
		defer debug.SetGCPercent(debug.SetGCPercent(-1))
		before := fdCount(t)
		d, err := OpenWriter(kd.dir, kd.db, testOpts)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.View(func(tx *Tx) error { _, err := tx.History(0); return err }); !errors.Is(err, ErrDamaged) {
			t.Fatalf("reading the damaged leaf: %v, want damage", err)
		}
		if d.poison.Load() == nil {
			t.Fatal("the handle is not poisoned")
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		if after := fdCount(t); after != before {
			t.Errorf("%d descriptors open after the poisoned handle closed, %d before", after, before)
		}
	})
}
