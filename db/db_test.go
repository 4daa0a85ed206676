package db

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

func TestCreate(t *testing.T) {
	kd := newKeyDir(t)
	created := time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC)
	d, err := OpenWriter(kd.dir, kd.db, Options{Now: func() time.Time { return created }})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var m Meta
	if err := d.View(func(tx *Tx) (err error) { m, err = tx.Meta(); return err }); err != nil {
		t.Fatal(err)
	}
	if want := (Meta{Schema: SchemaVersion, Created: created.UnixNano()}); m != want {
		t.Errorf("meta = %+v, want %+v", m, want)
	}
	ents, _ := os.ReadDir(kd.path)
	if len(ents) != 1 || ents[0].Name() != FileName {
		t.Errorf("key dir holds %v, want only %s (no temporary file left)", ents, FileName)
	}
	if st, err := os.Stat(kd.db); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("stat %s: %v, %v; want mode 0600", kd.db, st.Mode(), err)
	}
	if d.Path() != kd.db {
		t.Errorf("Path() = %q, want %q", d.Path(), kd.db)
	}
}

// A writer that loses the link race opens the winner's file and removes its
// own temporary file.
func TestCreateLosesLinkRace(t *testing.T) {
	rival := makeDB(t, 0)
	var rivalMeta Meta
	r, err := OpenReader(rival.dir, rival.db, testOpts)
	if err != nil {
		t.Fatal(err)
	}
	r.View(func(tx *Tx) (err error) { rivalMeta, err = tx.Meta(); return err })
	r.Close()

	kd := newKeyDir(t)
	testHookBeforeLink = func() {
		if err := os.Link(rival.db, kd.db); err != nil {
			t.Error(err)
		}
	}
	defer func() { testHookBeforeLink = nil }()
	d, err := OpenWriter(kd.dir, kd.db, Options{Now: func() time.Time { return time.Unix(1, 0) }})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var m Meta
	var s Sidecars
	d.View(func(tx *Tx) (err error) {
		m, _ = tx.Meta()
		s, err = tx.Sidecars()
		return err
	})
	if m != rivalMeta || s.Venue == nil || *s.Venue != "local" {
		t.Errorf("opened meta %+v venue %v, want the rival's %+v with its sidecars", m, s.Venue, rivalMeta)
	}
	ents, _ := os.ReadDir(kd.path)
	if len(ents) != 1 {
		t.Errorf("key dir holds %v, want only %s", ents, FileName)
	}
}

func TestReaderOfMissingFile(t *testing.T) {
	kd := newKeyDir(t)
	_, err := OpenReader(kd.dir, kd.db, testOpts)
	wantErr(t, err, fs.ErrNotExist)
	if !strings.HasPrefix(err.Error(), "open "+kd.db+": ") {
		t.Errorf("error %q does not read \"open path: cause\"", err)
	}
	if ents, _ := os.ReadDir(kd.path); len(ents) != 0 {
		t.Errorf("reader left %v behind", ents)
	}
}

// A reader changes nothing, and neither does a writer that finds the schema
// current and writes nothing itself.
func TestOpenWithoutWritesChangesNothing(t *testing.T) {
	kd := makeDB(t, 3)
	before := dirState(t, kd)
	time.Sleep(10 * time.Millisecond) // so that a touched mtime would differ
	for _, write := range []bool{false, true} {
		open := map[bool]func(*os.File, string, Options) (*DB, error){false: OpenReader, true: OpenWriter}[write]
		d, err := open(kd.dir, kd.db, testOpts)
		if err != nil {
			t.Fatal(err)
		}
		err = d.View(func(tx *Tx) error {
			_, err1 := tx.Sidecars()
			_, err2 := tx.History(0)
			_, err3 := tx.Meta()
			return errors.Join(err1, err2, err3)
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		if after := dirState(t, kd); after != before {
			t.Errorf("write=%v: key dir changed:\nbefore %s\nafter  %s", write, before, after)
		}
	}
}

func TestSidecarsRoundTrip(t *testing.T) {
	kd := newKeyDir(t)
	d := mustOpen(t, kd, true)
	read := func() Sidecars { t.Helper(); return sidecarsIn(t, d) }
	if s := read(); s != (Sidecars{}) {
		t.Fatalf("fresh file sidecars = %+v, want all absent", s)
	}
	populate(t, d, 0)
	s := read()
	want := Sidecars{
		Transcript:  &Transcript{Gen: 7, Size: 1234, CRC32C: 0xdeadbeef, PromotedAt: 1700000000e9},
		PiVersion:   ptr("0.54.2"),
		Venue:       ptr("local"),
		ResumeChain: ptr(uint64(3)),
		Context:     &Context{Tokens: 150000, Window: 200000, Model: "anthropic/claude"},
		Pending:     &Pending{Tmp: ".current.jsonl.tmp-abc", Size: 99, CRC32C: 42, Gen: 8},
	}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("sidecars = %s, want %s", show(s), show(want))
	}

	// Zero values are present, not absent; nil deletes.
	err := d.Update(func(tx *Tx) error {
		return errors.Join(tx.PutPiVersion(""), tx.PutResumeChain(0), tx.PutContext(nil), tx.PutPending(nil))
	})
	if err != nil {
		t.Fatal(err)
	}
	s = read()
	if s.PiVersion == nil || *s.PiVersion != "" || s.ResumeChain == nil || *s.ResumeChain != 0 {
		t.Errorf("zero values read as %s, want present and zero", show(s))
	}
	if s.Context != nil || s.Pending != nil {
		t.Errorf("deleted context/pending read as %s", show(s))
	}
}

// PutSidecars writes every field sc holds in one call: a record it does
// not hold stays as it was (a transcript is never taken away), and a nil
// context or pending entry is deleted.
func TestPutSidecars(t *testing.T) {
	kd := newKeyDir(t)
	d := mustOpen(t, kd, true)
	read := func() Sidecars { t.Helper(); return sidecarsIn(t, d) }
	all := Sidecars{
		Transcript:  &Transcript{Gen: 2, Size: 10, CRC32C: 7, PromotedAt: 1700000000e9},
		PiVersion:   ptr("0.58.3"),
		Venue:       ptr("host-a"),
		ResumeChain: ptr(uint64(1)),
		Context:     &Context{Tokens: 5, Window: 100, Model: "m/x"},
		Pending:     &Pending{Tmp: ".current.jsonl.tmp-1", Size: 10, CRC32C: 7, Gen: 2},
	}
	if err := d.Update(func(tx *Tx) error { return tx.PutSidecars(all) }); err != nil {
		t.Fatal(err)
	}
	if s := read(); !reflect.DeepEqual(s, all) {
		t.Fatalf("after PutSidecars(all): %s, want %s", show(s), show(all))
	}
	// Only the chain given: the transcript, versions and venue stay;
	// context and pending, nil, go.
	if err := d.Update(func(tx *Tx) error { return tx.PutSidecars(Sidecars{ResumeChain: ptr(uint64(4))}) }); err != nil {
		t.Fatal(err)
	}
	want := all
	want.ResumeChain, want.Context, want.Pending = ptr(uint64(4)), nil, nil
	if s := read(); !reflect.DeepEqual(s, want) {
		t.Fatalf("after PutSidecars(chain only): %s, want %s", show(s), show(want))
	}
	// A generation going back is refused, and the transaction with it.
	back := want
	back.Transcript = &Transcript{Gen: 1, Size: 3, CRC32C: 1}
	back.Venue = ptr("host-b")
	if err := d.Update(func(tx *Tx) error { return tx.PutSidecars(back) }); !errors.Is(err, ErrDamaged) {
		t.Fatalf("PutSidecars with gen 2 -> 1: %v, want ErrDamaged", err)
	}
	if s := read(); !reflect.DeepEqual(s, want) {
		t.Fatalf("after a refused PutSidecars: %s, want %s", show(s), show(want))
	}
}

// sidecarsIn reads d's sidecars in a View of their own.
func sidecarsIn(t *testing.T, d *DB) Sidecars {
	t.Helper()
	var s Sidecars
	if err := d.View(func(tx *Tx) (err error) { s, err = tx.Sidecars(); return err }); err != nil {
		t.Fatal(err)
	}
	return s
}

func ptr[T any](v T) *T { return &v }

func show(s Sidecars) string {
	var parts []string
	v := reflect.ValueOf(s)
	for i := range v.NumField() {
		val := "absent"
		if f := v.Field(i); !f.IsNil() {
			val = fmt.Sprintf("%+v", f.Elem().Interface())
		}
		parts = append(parts, v.Type().Field(i).Name+"="+val)
	}
	return strings.Join(parts, " ")
}

func TestHistoryRing(t *testing.T) {
	kd := newKeyDir(t)
	d := mustOpen(t, kd, true)
	const n = HistoryLimit + 36
	for g := 1; g <= n; g += 10 { // several transactions, some of them trimming
		if err := d.Update(func(tx *Tx) error { return appendN(tx, g, 10) }); err != nil {
			t.Fatal(err)
		}
	}
	var all, last5 []HistoryEntry
	d.View(func(tx *Tx) (err error) {
		all, err = tx.History(0)
		if err == nil {
			last5, err = tx.History(5)
		}
		return err
	})
	if len(all) != HistoryLimit || all[0].Gen != n-HistoryLimit+1 || all[len(all)-1].Gen != n {
		t.Fatalf("history holds %d entries, gens %d..%d; want the last %d, %d..%d",
			len(all), all[0].Gen, all[len(all)-1].Gen, HistoryLimit, n-HistoryLimit+1, n)
	}
	for i := 1; i < len(all); i++ {
		if all[i].Gen <= all[i-1].Gen {
			t.Fatalf("history not oldest first at %d: %d after %d", i, all[i].Gen, all[i-1].Gen)
		}
	}
	if len(last5) != 5 || last5[0].Gen != n-4 || last5[4] != all[len(all)-1] {
		t.Errorf("History(5) = %+v, want gens %d..%d oldest first", last5, n-4, n)
	}
	want := HistoryEntry{Seq: n, Gen: n, At: n * 1e9, Resumed: n%2 == 0, Reason: "resumed", Bytes: n * 100, Chain: n % 5, Job: "job-100"}
	if all[len(all)-1] != want {
		t.Errorf("last entry = %+v, want %+v", all[len(all)-1], want)
	}

	// Entries append in sequence whatever their Gen: a second entry at gen
	// n and one at gen 1 become the two newest, and the two oldest go.
	var seqs [2]uint64
	err := d.Update(func(tx *Tx) (err error) {
		if seqs[0], err = tx.AppendHistory(HistoryEntry{Seq: 7, Gen: n, Reason: "again", TornTail: true}); err != nil {
			return err
		}
		seqs[1], err = tx.AppendHistory(HistoryEntry{Gen: 1, Reason: "ancient"})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if seqs != [2]uint64{n + 1, n + 2} {
		t.Errorf("appended under %v, want %d and %d", seqs, n+1, n+2)
	}
	d.View(func(tx *Tx) (err error) { all, err = tx.History(0); return err })
	wantLast := []HistoryEntry{{Seq: n + 1, Gen: n, Reason: "again", TornTail: true}, {Seq: n + 2, Gen: 1, Reason: "ancient"}}
	if len(all) != HistoryLimit || all[0].Seq != n-HistoryLimit+3 || !reflect.DeepEqual(all[len(all)-2:], wantLast) {
		t.Errorf("after two more appends: %d entries, first seq %d, last two %+v; want %d, %d, %+v",
			len(all), all[0].Seq, all[len(all)-2:], HistoryLimit, n-HistoryLimit+3, wantLast)
	}
}

func TestReadOnly(t *testing.T) {
	kd := makeDB(t, 0)
	w := mustOpen(t, kd, true)
	err := w.View(func(tx *Tx) error { return tx.PutVenue("x") })
	wantErr(t, err, ErrReadOnly)
	w.Close()

	r := mustOpen(t, kd, false)
	wantErr(t, r.Update(func(tx *Tx) error { return nil }), ErrReadOnly)
	wantErr(t, r.View(func(tx *Tx) error { return appended(tx.AppendHistory(HistoryEntry{})) }), ErrReadOnly)
}

func TestUpdateRollsBack(t *testing.T) {
	kd := newKeyDir(t)
	d := mustOpen(t, kd, true)
	boom := errors.New("boom")
	err := d.Update(func(tx *Tx) error {
		tx.PutVenue("lost")
		return boom
	})
	if err != boom {
		t.Fatalf("Update returned %v, want fn's error as is", err)
	}
	// A failed write ends the transaction even when fn ignores it.
	err = d.Update(func(tx *Tx) error {
		tx.PutVenue("lost too")
		tx.tx.DeleteBucket([]byte(bucketSidecars)) // the next put finds no bucket
		tx.PutPiVersion("x")
		return nil
	})
	wantErr(t, err, ErrDamaged)
	var s Sidecars
	if err := d.View(func(tx *Tx) (err error) { s, err = tx.Sidecars(); return err }); err != nil {
		t.Fatal(err)
	}
	if s.Venue != nil {
		t.Errorf("venue %q survived a rolled-back update", *s.Venue)
	}
}

func TestPanicInFnPropagates(t *testing.T) {
	kd := newKeyDir(t)
	d := mustOpen(t, kd, true)
	func() {
		defer func() {
			if r := recover(); r != "caller bug" {
				t.Errorf("recovered %v, want the caller's own panic", r)
			}
		}()
		d.Update(func(tx *Tx) error {
			tx.PutVenue("half")
			panic("caller bug")
		})
	}()
	// The handle still works and the write was rolled back.
	var s Sidecars
	if err := d.View(func(tx *Tx) (err error) { s, err = tx.Sidecars(); return err }); err != nil || s.Venue != nil {
		t.Errorf("after a panicking update: sidecars %v, err %v; want none and nil", s.Venue, err)
	}
}

func TestUseAfterEnd(t *testing.T) {
	kd := newKeyDir(t)
	d := mustOpen(t, kd, true)
	var kept *Tx
	d.View(func(tx *Tx) error { kept = tx; return nil })
	_, err := kept.Sidecars()
	wantErr(t, err, ErrClosed)
	d.Close()
	wantErr(t, d.View(func(*Tx) error { return nil }), ErrClosed)
	if err := d.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// A damaged value names its key, and ends the transaction even if fn
// swallows the error.
func TestDamagedRecordNamesKey(t *testing.T) {
	kd := newKeyDir(t)
	d := mustOpen(t, kd, true)
	err := d.bdb.Update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte(bucketSidecars)).Put([]byte(keyVenue), []byte{0xc0}) // msgpack nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var inner error
	err = d.View(func(tx *Tx) error {
		_, inner = tx.Sidecars()
		return nil
	})
	wantErr(t, err, ErrDamaged)
	if inner == nil || !strings.Contains(inner.Error(), "sidecars/venue") {
		t.Errorf("error %v does not name sidecars/venue", inner)
	}
}

func TestKeyDirNotADirectory(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "file"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, err = OpenWriter(f, f.Name(), testOpts)
	if err == nil || errors.Is(err, ErrDamaged) {
		t.Errorf("OpenWriter on a regular file as key dir: %v, want ENOTDIR", err)
	}
}
