package store

import (
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/faults"
)

// TestAcceptOfAKeyQuarantinedWhileItWaitedIsNotAccepted: Accept's doc
// promises ErrNotAccepted, nothing written, when the key dir was moved
// aside while Accept waited for its lock. A key whose meta.db a repair
// moved aside has none to lock: a quarantine that takes the key meanwhile
// makes one for its lock and removes it again in the dir it moved, so
// Accept's open finds none and would make it, and is refused by its
// still-at-key check there, inside the open. (TestChaos found it: that
// refusal came back as the open's own error, not ErrNotAccepted.)
func TestAcceptOfAKeyQuarantinedWhileItWaitedIsNotAccepted(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "the run")
	kd := filepath.Join(root, testKey)
	if err := os.Rename(filepath.Join(kd, db.FileName), filepath.Join(kd, AsidePrefix+"20261101T120000Z")); err != nil {
		t.Fatal(err)
	}
	var once atomic.Bool
	var aside, moved string
	faults.Set(func(p faults.Point) error {
		// Accept has looked at the key and sets out to take its lock: a
		// quarantine takes the key first.
		if p == faults.DBOpenWriter && once.CompareAndSwap(false, true) {
			var err error
			if aside, err = s.Quarantine(testKey); err != nil {
				t.Errorf("quarantine: %v", err)
			} else {
				moved = entriesOf(t, filepath.Join(root, aside))
			}
		}
		return nil
	})
	res, err := s.Accept(testKey)
	faults.Set(nil)
	if aside == "" {
		t.Fatal("no quarantine ran while Accept waited")
	}
	if !errors.Is(err, ErrNotAccepted) {
		t.Errorf("accept = %+v, %v; want ErrNotAccepted: the key dir was moved aside while it waited", res, err)
	}
	if after := entriesOf(t, filepath.Join(root, aside)); after != moved {
		t.Errorf("the quarantine dir changed after the quarantine:\n%s\nwas\n%s", after, moved)
	}
	if _, err := os.Lstat(kd); !os.IsNotExist(err) {
		t.Errorf("something is at the key's name after the quarantine: %v", err)
	}
}
