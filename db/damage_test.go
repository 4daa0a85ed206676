package db

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// bucketPage returns the offset of the root page of bucket (flags
// branchFlag) or of its first leaf (leafFlag). history/ with HistoryLimit
// entries has a branch root; the opens never read it, so damage there is met
// first inside a transaction.
func bucketPage(t testing.TB, path, bucket string, flags uint16) int64 {
	t.Helper()
	bdb, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var id uint64
	bdb.View(func(tx *bolt.Tx) error { id = uint64(tx.Bucket([]byte(bucket)).Root()); return nil })
	bdb.Close()
	if id == 0 {
		t.Fatalf("%s/ is inline; the test needs it on pages of its own", bucket)
	}
	m, err := inspect(t, path)
	if err != nil {
		t.Fatal(err)
	}
	ps := uint64(m.PageSize)
	data := readFile(t, path)
	if flags == leafFlag && nativeEndian.Uint16(data[id*ps+8:]) == branchFlag {
		id = nativeEndian.Uint64(data[id*ps+pageHeaderSize+8:]) // follow the first element
	}
	if got := nativeEndian.Uint16(data[id*ps+8:]); got != flags {
		t.Fatalf("page %d of %s/ has flags %#x, want %#x", id, bucket, got, flags)
	}
	return int64(id * ps)
}

// openAndRead opens the file as reader or writer and reads every record,
// returning the first error.
func openAndRead(kd keyDir, write bool) error {
	open := OpenReader
	if write {
		open = OpenWriter
	}
	d, err := open(kd.dir, kd.db, testOpts)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.View(func(tx *Tx) error {
		_, err1 := tx.Meta()
		_, err2 := tx.Sidecars()
		_, err3 := tx.History(0)
		return errors.Join(err1, err2, err3)
	})
}

// TestDamage builds a real file, damages it, and expects ErrDamaged from
// both kinds of open with the process alive. Each case runs in a child
// process so that a guard regression fails the case instead of killing the
// test binary. Cases marked guard run a second time with the pre-check's
// tree walk switched off, so that bbolt meets the damaged page inside a
// transaction and the recover guard must catch its panic or fault.
func TestDamage(t *testing.T) {
	cases := []struct {
		name    string
		damage  func(t *testing.T, kd keyDir, m MetaPages)
		guard   bool // also run without the walk: bbolt must panic or fault, and be caught
		fault   bool // and that must be a memory fault, not a panic
		history int  // entries in the file before the damage
	}{
		{name: "truncated one page below the high-water mark", damage: func(t *testing.T, kd keyDir, m MetaPages) {
			os.Truncate(kd.db, m.HighWater()-int64(m.PageSize))
		}},
		{name: "truncated to the meta pages", damage: func(t *testing.T, kd keyDir, m MetaPages) {
			os.Truncate(kd.db, 2*int64(m.PageSize))
		}},
		{name: "zero bytes", damage: func(t *testing.T, kd keyDir, m MetaPages) { os.Truncate(kd.db, 0) }},
		{name: "garbage", damage: func(t *testing.T, kd keyDir, m MetaPages) {
			b := make([]byte, 64<<10)
			rand.Read(b)
			os.WriteFile(kd.db, b, 0o600)
		}},
		{name: "short garbage", damage: func(t *testing.T, kd keyDir, m MetaPages) {
			os.WriteFile(kd.db, []byte(strings.Repeat("not a bbolt file\n", 6)), 0o600)
		}},
		{name: "both meta pages torn", damage: func(t *testing.T, kd keyDir, m MetaPages) {
			tearMeta(t, kd.db, m, 0)
			tearMeta(t, kd.db, m, 1)
		}},
		{name: "freelist count", damage: func(t *testing.T, kd keyDir, m MetaPages) {
			off := int64(m.Pages[m.Active].Freelist) * int64(m.PageSize)
			writeAt(t, kd.db, off+10, binary.NativeEndian.AppendUint16(nil, 0xFFFF))
			writeAt(t, kd.db, off+pageHeaderSize, binary.NativeEndian.AppendUint64(nil, 1<<40))
		}},
		{name: "branch cycle", history: HistoryLimit, damage: func(t *testing.T, kd keyDir, m MetaPages) {
			// Never run without the walk: bbolt's cursor would loop until
			// the process dies of an out-of-memory error.
			off := bucketPage(t, kd.db, bucketHistory, branchFlag)
			id := uint64(off) / uint64(m.PageSize)
			writeAt(t, kd.db, off+pageHeaderSize+8, binary.NativeEndian.AppendUint64(nil, id))
		}},
		{name: "leaf element offset out of range", guard: true, history: HistoryLimit, damage: func(t *testing.T, kd keyDir, m MetaPages) {
			off := bucketPage(t, kd.db, bucketHistory, leafFlag)
			writeAt(t, kd.db, off+pageHeaderSize+4, binary.NativeEndian.AppendUint32(nil, 0x7ffffff0))
		}},
		{name: "leaf element offset past the end of the file", guard: true, fault: true, damage: func(t *testing.T, kd keyDir, m MetaPages) {
			// bbolt sizes a small file to its whole 32 KiB mapping. Cut it
			// to its high-water mark (still a valid file), then move the key
			// of the root page's first element into the part of the mapping
			// past the end of the file, on the first OS page wholly past it
			// (the rest of the file's last OS page reads as zeros): SIGBUS
			// when read.
			hw := m.HighWater()
			ps := int64(os.Getpagesize())
			past := (hw+ps-1)/ps*ps + 64
			if past >= 32<<10 {
				t.Fatalf("high-water mark %d leaves no room in a 32 KiB mapping", hw)
			}
			if err := os.Truncate(kd.db, hw); err != nil {
				t.Fatal(err)
			}
			off := int64(m.Pages[m.Active].Root) * int64(m.PageSize)
			writeAt(t, kd.db, off+pageHeaderSize+4, binary.NativeEndian.AppendUint32(nil, uint32(past-off)))
		}},
		{name: "leaf page type", guard: true, history: HistoryLimit, damage: func(t *testing.T, kd keyDir, m MetaPages) {
			off := bucketPage(t, kd.db, bucketHistory, leafFlag)
			writeAt(t, kd.db, off+8, []byte{0, 0})
		}},
	}
	for _, c := range cases {
		for _, walk := range []bool{true, false} {
			if !walk && !c.guard {
				continue
			}
			name := strings.ReplaceAll(c.name, " ", "_")
			if !walk {
				name += "_guard"
			}
			t.Run(name, func(t *testing.T) {
				inChild(t, func(t *testing.T) {
					testSkipWalk = !walk
					damageCase(t, c.history, c.damage, !walk, c.fault && !walk)
				})
			})
		}
	}
}

func damageCase(t *testing.T, history int, damage func(*testing.T, keyDir, MetaPages), mustPanic, mustFault bool) {
	kd := makeDB(t, history)
	m, err := inspect(t, kd.db)
	if err != nil {
		t.Fatal(err)
	}
	damage(t, kd, m)
	before := dirState(t, kd)
	for _, write := range []bool{false, true} {
		err := openAndRead(kd, write)
		if !errors.Is(err, ErrDamaged) {
			t.Fatalf("write=%v: got %v, want ErrDamaged", write, err)
		}
		t.Logf("write=%v: %v", write, err)
		var pe *panicError
		panicked := errors.As(err, &pe)
		if !write {
			// A reader decodes its snapshot of the file with bounds of
			// its own: the damage that makes bbolt panic is refused
			// before anything panics.
			if panicked {
				t.Errorf("write=false: %v: the snapshot reader panicked", err)
			}
			continue
		}
		if mustPanic && !panicked {
			t.Errorf("write=%v: %v did not come from a recovered bbolt panic", write, err)
		}
		if _, isFault := pe.faultAddr(); mustFault && !isFault {
			t.Errorf("write=%v: %v was not a memory fault", write, err)
		}
	}
	if after := dirState(t, kd); after != before {
		t.Errorf("a damaged file was changed:\nbefore %s\nafter  %s", before, after)
	}
	if n := keyLockCount(); n != 0 {
		t.Errorf("%d in-process locks left after damaged opens", n)
	}
	// The flock went with the handle: another open is not refused for a lock.
	if err := openAndRead(kd, true); errors.Is(err, ErrLockTimeout) {
		t.Errorf("lock still held after a damaged handle closed: %v", err)
	}
}

// faultAddr reports the address of a recovered memory fault.
func (e *panicError) faultAddr() (uintptr, bool) {
	if e == nil {
		return 0, false
	}
	a, ok := e.value.(interface{ Addr() uintptr })
	if !ok {
		return 0, false
	}
	return a.Addr(), true
}

// Without the pre-check bbolt dies on a truncated file: the damage the test
// above survives is real.
func TestTruncationKillsBareBbolt(t *testing.T) {
	if os.Getenv(childEnv) == t.Name() {
		kd := makeDB(t, HistoryLimit)
		m, _ := inspect(t, kd.db)
		// bbolt learns the page size from the first 4 KiB, so they stay;
		// the pages past them are cut off.
		if m.HighWater() <= 4096 {
			t.Fatalf("high-water mark %d: the file has no pages past its first 4 KiB", m.HighWater())
		}
		os.Truncate(kd.db, 4096)
		bdb, err := bolt.Open(kd.db, 0o600, &bolt.Options{ReadOnly: true})
		if err != nil {
			t.Fatalf("bbolt refused the file itself: %v", err)
		}
		bdb.View(func(tx *bolt.Tx) error { tx.Bucket([]byte(bucketHistory)); return nil })
		t.Log("bbolt survived")
		return
	}
	out, err := runChild(t, nil, nil)
	var ee interface{ Sys() any }
	if err == nil || !errors.As(err, &ee) || !strings.Contains(string(out), "SIGBUS") {
		t.Fatalf("bare bbolt on a truncated file: %v, want death by SIGBUS\n%s", err, out)
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok {
		t.Logf("child exited with %d: %s", ws.ExitStatus(), firstLine(out, "SIGBUS"))
	}
}

func firstLine(out []byte, substr string) string {
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, substr) {
			return l
		}
	}
	return ""
}

// A meta.db that is not a regular file is damage, is never followed or
// replaced, and never blocks (a FIFO opened for reading would).
func TestNotARegularFile(t *testing.T) {
	cases := map[string]func(t *testing.T, kd keyDir){
		"symlink": func(t *testing.T, kd keyDir) {
			target := makeDB(t, 1)
			if err := os.Symlink(target.db, kd.db); err != nil {
				t.Fatal(err)
			}
		},
		"fifo": func(t *testing.T, kd keyDir) {
			if err := syscall.Mkfifo(kd.db, 0o600); err != nil {
				t.Fatal(err)
			}
		},
		"directory": func(t *testing.T, kd keyDir) {
			if err := os.Mkdir(kd.db, 0o700); err != nil {
				t.Fatal(err)
			}
		},
	}
	for name, make := range cases {
		t.Run(name, func(t *testing.T) {
			kd := newKeyDir(t)
			make(t, kd)
			before := dirState(t, kd)
			for _, write := range []bool{false, true} {
				err := openAndRead(kd, write)
				wantErr(t, err, ErrDamaged)
			}
			if after := dirState(t, kd); after != before {
				t.Errorf("key dir changed:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}

// guard turns faults and panics into damage on the calling goroutine only
// for its own duration.
func TestGuard(t *testing.T) {
	var p *int
	err := guard(func() error { _ = *p; return nil })
	var pe *panicError
	if !errors.As(err, &pe) || !errors.Is(err, ErrDamaged) {
		t.Errorf("nil dereference under guard: %v, want a panicError that is ErrDamaged", err)
	}
	err = guard(func() error { panic("invalid page type") })
	if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "invalid page type") {
		t.Errorf("panic under guard: %v", err)
	}
}
