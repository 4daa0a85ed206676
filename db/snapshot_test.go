package db

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"reflect"
	"strings"
	"testing"
)

// readAll reads everything a Tx offers a reader.
type readAll struct {
	Meta     Meta
	Sidecars Sidecars
	History  []HistoryEntry
	Last3    []HistoryEntry
}

func readEverything(t *testing.T, d *DB) readAll {
	t.Helper()
	var r readAll
	err := d.View(func(tx *Tx) (err error) {
		if r.Meta, err = tx.Meta(); err != nil {
			return err
		}
		if r.Sidecars, err = tx.Sidecars(); err != nil {
			return err
		}
		if r.History, err = tx.History(0); err != nil {
			return err
		}
		r.Last3, err = tx.History(3)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A reader decodes meta.db itself instead of through bbolt: it must read
// exactly what bbolt reads, for files of every shape a writer leaves
// behind: inline buckets, leaves split over branch pages, values on
// overflow pages, trimmed history, and sidecars deleted again.
func TestSnapshotReadsWhatBboltReads(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for round := range 40 {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			kd := newKeyDir(t)
			w, err := OpenWriter(kd.dir, kd.db, testOpts)
			if err != nil {
				t.Fatal(err)
			}
			commits := 1 + rng.Intn(150)
			for g := 1; g <= commits; g++ {
				long := strings.Repeat("j", rng.Intn(3)*rng.Intn(3000)) // now and then past a page
				err := w.Update(func(tx *Tx) error {
					ctx := &Context{Tokens: rng.Int63n(200000), Window: 200000, Model: "m" + long}
					if rng.Intn(4) == 0 {
						ctx = nil
					}
					var pend *Pending
					if rng.Intn(2) == 0 {
						pend = &Pending{Tmp: ".current.jsonl.tmp-" + fmt.Sprint(g), Size: int64(g), CRC32C: uint64(g), Gen: uint64(g)}
					}
					return errors.Join(
						tx.PutTranscript(Transcript{Gen: uint64(g), Size: rng.Int63(), CRC32C: uint64(rng.Uint32()), PromotedAt: rng.Int63()}),
						tx.PutPiVersion(fmt.Sprintf("0.%d.%d", rng.Intn(99), g)),
						tx.PutVenue([]string{"local", "podman", "(pending)" + long}[rng.Intn(3)]),
						tx.PutResumeChain(uint64(rng.Intn(50))),
						tx.PutContext(ctx),
						tx.PutPending(pend),
						appended(tx.AppendHistory(HistoryEntry{Gen: uint64(g), At: rng.Int63(), Resumed: rng.Intn(2) == 0,
							Reason: "resumed", Bytes: rng.Int63n(1 << 30), Chain: uint64(g), Job: "job-" + long, TornTail: rng.Intn(9) == 0})),
					)
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			viaBbolt := readEverything(t, w)
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}

			r, err := OpenReader(kd.dir, kd.db, testOpts)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if r.snap == nil {
				t.Fatalf("a %d-commit meta.db was not read as a snapshot", commits)
			}
			viaSnapshot := readEverything(t, r)
			if !reflect.DeepEqual(viaSnapshot, viaBbolt) {
				t.Fatalf("after %d commits the snapshot reads\n%+v\nbbolt reads\n%+v", commits, viaSnapshot, viaBbolt)
			}
			if len(viaBbolt.History) != min(commits, HistoryLimit) {
				t.Fatalf("%d history entries after %d commits", len(viaBbolt.History), commits)
			}
			// Check gives the reader a bbolt handle on the same locked file.
			if problems, err := r.Check(10); err != nil || problems != nil {
				t.Fatalf("check: %v %v", problems, err)
			}
			if again := readEverything(t, r); !reflect.DeepEqual(again, viaBbolt) {
				t.Fatalf("after Check the reader reads\n%+v\nwant\n%+v", again, viaBbolt)
			}
		})
	}
}

// The reader holds the shared lock for as long as it is open, snapshot or
// not: a writer waits for it, and gets the lock once it is closed.
func TestSnapshotReaderHoldsTheLock(t *testing.T) {
	kd := makeDB(t, 3)
	r, err := OpenReader(kd.dir, kd.db, testOpts)
	if err != nil {
		t.Fatal(err)
	}
	if r.snap == nil {
		t.Fatal("not a snapshot reader")
	}
	if problems, err := r.Check(10); err != nil || problems != nil { // Check's own bbolt handle must not drop the lock
		t.Fatalf("check: %v %v", problems, err)
	}
	if _, err := OpenWriter(kd.dir, kd.db, Options{LockTimeout: 50e6}); !errors.Is(err, ErrLockTimeout) {
		t.Fatalf("a writer opened beside a reader: %v", err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	w, err := OpenWriter(kd.dir, kd.db, testOpts)
	if err != nil {
		t.Fatalf("the reader's Close did not release the lock: %v", err)
	}
	w.Close()
}

// A file whose pages span more than snapshotLimit is read through bbolt.
func TestLargeFileIsReadThroughBbolt(t *testing.T) {
	kd := newKeyDir(t)
	w, err := OpenWriter(kd.dir, kd.db, testOpts)
	if err != nil {
		t.Fatal(err)
	}
	// Overflow pages past the limit, in two records: one is at most
	// MaxRecordBytes, the limit itself.
	big := strings.Repeat("v", snapshotLimit*3/5)
	if err := w.Update(func(tx *Tx) error { return errors.Join(tx.PutPiVersion(big), tx.PutVenue(big)) }); err != nil {
		t.Fatal(err)
	}
	want := readEverything(t, w)
	w.Close()
	r, err := OpenReader(kd.dir, kd.db, testOpts)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.snap != nil || r.bdb == nil {
		t.Fatal("a file over the snapshot limit was read into memory")
	}
	if got := readEverything(t, r); !reflect.DeepEqual(got, want) || *got.Sidecars.PiVersion != big {
		t.Fatal("a large file read through bbolt does not read what was written")
	}
}

// readSnapshot refuses what bbolt's binary search would misread: keys out
// of order within a bucket.
func TestSnapshotRefusesKeysOutOfOrder(t *testing.T) {
	kd := makeDB(t, 4)
	b, err := os.ReadFile(kd.db)
	if err != nil {
		t.Fatal(err)
	}
	m, err := InspectMeta(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	// Swap the last byte of two history keys (big-endian gens 1 and 2) in
	// the live leaf: copy-on-write leaves older copies elsewhere in the file.
	off := int(bucketPage(t, kd.db, bucketHistory, leafFlag))
	keyAt := func(e int) int { // where leaf element e's key starts
		at := off + pageHeaderSize + e*elementSize
		return at + int(nativeEndian.Uint32(b[at+4:]))
	}
	i, j := keyAt(0)+7, keyAt(1)+7
	if !bytes.Equal(b[i-7:i+1], historyKey(1)) || !bytes.Equal(b[j-7:j+1], historyKey(2)) {
		t.Fatal("the history leaf does not start with gens 1 and 2")
	}
	b[i], b[j] = b[j], b[i]
	if _, err := readSnapshot(b, m); !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "does not follow") {
		t.Fatalf("keys out of order: %v", err)
	}
}
