package db

import (
	"bytes"
	"errors"
	"os"
	"testing"
)

// FuzzPrecheck feeds arbitrary files to the pre-check that runs before
// bbolt maps a file, and what it accepts to the reader's snapshot decoder. It reads with ReadAt only, so unlike bbolt.Open it is
// safe to fuzz in-process: it must never panic or hang, and whatever it
// accepts must at least be as long as its own high-water mark (the SIGBUS
// the pre-check exists to prevent).
func FuzzPrecheck(f *testing.F) {
	kd := makeDB(f, 8)
	real, err := os.ReadFile(kd.db)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(real)
	f.Add(real[:len(real)/2])
	f.Add(real[:2*os.Getpagesize()])
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte{0xff}, 4096))
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bytes.NewReader(b)
		err := precheck(r, int64(len(b)))
		m, ierr := InspectMeta(r, int64(len(b)))
		if err != nil {
			return
		}
		if ierr != nil || m.Active < 0 || !m.Pages[m.Active].Valid() {
			t.Fatalf("precheck accepted a file InspectMeta rejects: %v, %+v", ierr, m)
		}
		if int64(len(b)) < m.HighWater() {
			t.Fatalf("precheck accepted a %d-byte file under its high-water mark %d", len(b), m.HighWater())
		}
		// What the pre-check accepts, a reader decodes without bbolt: it
		// must return records or ErrDamaged, never panic.
		if _, err := readSnapshot(b, m); err != nil && !errors.Is(err, ErrDamaged) {
			t.Fatalf("readSnapshot: %v is not ErrDamaged", err)
		}
	})
}
