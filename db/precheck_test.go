package db

import (
	"errors"
	"io"
	mathrand "math/rand/v2"
	"os"
	"strings"
	"testing"
)

func inspect(t testing.TB, path string) (MetaPages, error) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	return InspectMeta(f, st.Size())
}

func writeAt(t testing.TB, path string, off int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// tearMeta breaks meta page i's checksum the way a torn write would: one
// covered byte (in the txid) differs from what was summed.
func tearMeta(t testing.TB, path string, m MetaPages, i int) {
	t.Helper()
	off := m.Pages[i].Offset + pageHeaderSize + 48
	writeAt(t, path, off, []byte{byte(m.Pages[i].Txid) ^ 0x55})
}

// A torn meta page is not damage: bbolt falls back to the other one, and
// InspectMeta shows that it will.
func TestOneMetaPageTorn(t *testing.T) {
	for _, torn := range []string{"newer", "older"} {
		t.Run(torn, func(t *testing.T) {
			inChild(t, func(t *testing.T) {
				kd := makeDB(t, 2)
				func() {
					d := mustOpen(t, kd, true)
					if err := d.Update(func(tx *Tx) error { return tx.PutVenue("newest") }); err != nil {
						t.Fatal(err)
					}
					d.Close()
				}()
				m, err := inspect(t, kd.db)
				if err != nil {
					t.Fatal(err)
				}
				newer := m.Active
				i, wantActive, wantVenue := newer, 1-newer, "local"
				if torn == "older" {
					i, wantActive, wantVenue = 1-newer, newer, "newest"
				}
				tearMeta(t, kd.db, m, i)

				m, err = inspect(t, kd.db)
				if err != nil {
					t.Fatalf("InspectMeta refused a file with one good meta page: %v", err)
				}
				if m.Active != wantActive || m.Pages[i].Valid() || m.PageSize != PageSize {
					t.Fatalf("InspectMeta: active %d, page %d error %v, page size %d; want active %d, page %d invalid",
						m.Active, i, m.Pages[i].Err, m.PageSize, wantActive, i)
				}
				d := mustOpen(t, kd, true)
				var s Sidecars
				if err := d.View(func(tx *Tx) (err error) { s, err = tx.Sidecars(); return err }); err != nil {
					t.Fatal(err)
				}
				if s.Venue == nil || *s.Venue != wantVenue {
					t.Errorf("venue = %v, want %q from the meta page bbolt fell back to", s.Venue, wantVenue)
				}
				// The next commit rewrites the torn page.
				if err := d.Update(func(tx *Tx) error { return tx.PutVenue("after") }); err != nil {
					t.Fatal(err)
				}
				d.Close()
				if m, err := inspect(t, kd.db); err != nil || !m.Pages[0].Valid() || !m.Pages[1].Valid() {
					t.Errorf("after a commit: %+v, %v; want both pages valid", m, err)
				}
			})
		})
	}
}

func TestInspectMetaHealthy(t *testing.T) {
	kd := makeDB(t, HistoryLimit)
	m, err := inspect(t, kd.db)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(kd.db)
	p := m.Pages[m.Active]
	if !m.Pages[0].Valid() || !m.Pages[1].Valid() || m.Pages[1-m.Active].Txid >= p.Txid {
		t.Errorf("pages %+v: want both valid, the active one newer", m.Pages)
	}
	if m.PageSize != PageSize || m.Size != st.Size() || m.HighWater() > st.Size() || m.HighWater() < 4*int64(m.PageSize) {
		t.Errorf("page size %d size %d high water %d, file is %d bytes", m.PageSize, m.Size, m.HighWater(), st.Size())
	}
	if p.Magic != boltMagic || p.Version != boltVersion || p.Root >= p.Pgid || p.Freelist >= p.Pgid {
		t.Errorf("active page %+v is not a sane bbolt meta page", p)
	}
}

// The pre-check must never refuse a healthy file: after every commit of a
// long random workload (overflow pages, deletions, a cycling history ring)
// it passes, and so does bbolt's own consistency check.
func TestPrecheckAcceptsHealthyFiles(t *testing.T) {
	kd := newKeyDir(t)
	rng := mathrand.New(mathrand.NewPCG(1, 2))
	text := func(max int) string { return strings.Repeat("x", rng.IntN(max)) }
	d := mustOpen(t, kd, true)
	for round := range 300 {
		err := d.Update(func(tx *Tx) error {
			errs := []error{
				tx.PutTranscript(Transcript{Gen: uint64(round) + 1, Size: rng.Int64()}),
				tx.PutVenue(text(6000)), // past a page: overflow pages
				appended(tx.AppendHistory(HistoryEntry{Gen: uint64(round), Job: text(3000), Reason: "resumed"})),
			}
			if rng.IntN(2) == 0 {
				errs = append(errs, tx.PutContext(nil), tx.PutPending(&Pending{Tmp: text(100), Gen: uint64(round) + 1}))
			} else {
				errs = append(errs, tx.PutContext(&Context{Model: text(50)}), tx.PutPending(nil))
			}
			return errors.Join(errs...)
		})
		if err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(kd.db)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := f.Stat()
		err = precheck(f, st.Size())
		f.Close()
		if err != nil {
			t.Fatalf("round %d: pre-check refused a healthy file: %v", round, err)
		}
		if round%50 == 49 { // the opens run it too, under the lock
			d.Close()
			d = mustOpen(t, kd, true)
		}
	}
	m, _ := inspect(t, kd.db)
	t.Logf("file of %d pages, %d bytes", m.Pages[m.Active].Pgid, m.Size)
}

// precheck is InspectMeta and then precheckTree, as a writer's open runs
// them.
func precheck(f io.ReaderAt, size int64) error {
	m, err := InspectMeta(f, size)
	if err != nil {
		return err
	}
	return precheckTree(f, m, true)
}
