package db

import (
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"runtime"
	"strings"
	"testing"
)

// setHighWater sets both meta pages' high-water mark to pgid, checksums
// and all, and makes the file that long: sparse, past what it held.
func setHighWater(t *testing.T, path string, m MetaPages, pgid uint64) {
	t.Helper()
	for _, p := range m.Pages {
		meta := readFile(t, path)[p.Offset+pageHeaderSize:][:metaSize]
		nativeEndian.PutUint64(meta[40:], pgid)
		h := fnv.New64a()
		h.Write(meta[:metaSumBytes])
		nativeEndian.PutUint64(meta[metaSumBytes:], h.Sum64())
		writeAt(t, path, p.Offset+pageHeaderSize, meta)
	}
	if err := os.Truncate(path, int64(pgid)*int64(m.PageSize)); err != nil {
		t.Skipf("this file system holds no sparse file of %d pages: %v", pgid, err)
	}
}

// A page header that claims 2^32 pages of a sparse file (16 TiB with 4 KiB
// pages) is damage to every open, named, and found at once: bbolt gives a
// node or its freelist the pages it takes, and no more. Before, the walk
// marked each claimed page of the freelist in a map, and resolve died of
// an out-of-memory error; a writer's bbolt frees each page of such a span,
// one id at a time, at its next commit.
func TestAPageClaimingASparseFileIsDamage(t *testing.T) {
	for _, c := range []struct{ name, want string }{
		{"freelist", "freelist page %d spans 4294967"},
		{"root", "page %d spans 4294967"},
	} {
		t.Run(c.name, func(t *testing.T) {
			kd := makeDB(t, 3)
			m, err := inspect(t, kd.db)
			if err != nil {
				t.Fatal(err)
			}
			p := m.Pages[m.Active]
			const pgid = 1 << 32
			setHighWater(t, kd.db, m, pgid)
			id := p.Root
			if c.name == "freelist" {
				id = p.Freelist
			}
			// The page's overflow to the last page: its span passes no
			// page after it but for the root, which the freelist follows.
			writeAt(t, kd.db, int64(id)*int64(m.PageSize)+12, nativeEndian.AppendUint32(nil, uint32(pgid-id-1)))
			want := fmt.Sprintf(c.want, id)
			for _, write := range []bool{false, true} {
				if err := openAndRead(kd, write); !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), want) {
					t.Errorf("write=%v: %v; want ErrDamaged saying %q", write, err, want)
				}
			}
		})
	}
}

// grownLeaf copies the history's first leaf to a page past the high-water
// mark, its last value made vsize bytes (its span grown to take it, the
// file sparse past what it held), points the branch at it, and returns
// the file's meta pages. grow, when not nil, edits the page before it is
// written.
func grownLeaf(t *testing.T, kd keyDir, vsize uint64, grow func(page []byte, ps uint64)) MetaPages {
	t.Helper()
	m, err := inspect(t, kd.db)
	if err != nil {
		t.Fatal(err)
	}
	ps := uint64(m.PageSize)
	branch := uint64(bucketPage(t, kd.db, bucketHistory, branchFlag)) / ps
	data := readFile(t, kd.db)
	leaf := nativeEndian.Uint64(data[branch*ps+pageHeaderSize+8:])
	page := append([]byte(nil), data[leaf*ps:(leaf+1)*ps]...)
	if nativeEndian.Uint32(page[12:]) != 0 {
		t.Fatal("the history leaf has overflow pages; the test wants a page of one")
	}
	count := uint64(nativeEndian.Uint16(page[10:]))
	last := pageHeaderSize + (count-1)*elementSize
	pos, ksize := uint64(nativeEndian.Uint32(page[last+4:])), uint64(nativeEndian.Uint32(page[last+8:]))
	nativeEndian.PutUint32(page[last+12:], uint32(vsize))
	if grow != nil {
		grow(page, ps)
	}
	used := last + pos + ksize + vsize
	for i := range uint64(nativeEndian.Uint16(page[10:])) {
		e := page[pageHeaderSize+i*elementSize:]
		used = max(used, pageHeaderSize+i*elementSize+uint64(nativeEndian.Uint32(e[4:]))+uint64(nativeEndian.Uint32(e[8:]))+uint64(nativeEndian.Uint32(e[12:])))
	}
	overflow := (used+ps-1)/ps - 1
	moved := m.Pages[m.Active].Pgid
	nativeEndian.PutUint64(page[0:], moved)
	nativeEndian.PutUint32(page[12:], uint32(overflow))
	setHighWater(t, kd.db, m, moved+overflow+1)
	writeAt(t, kd.db, int64(moved*ps), page)
	writeAt(t, kd.db, int64(branch*ps+pageHeaderSize+8), nativeEndian.AppendUint64(nil, moved))
	if m, err = inspect(t, kd.db); err != nil {
		t.Fatal(err)
	}
	return m
}

// A page the walk accepts, of the most bbolt writes (four values, each the
// most a record may be) in a sparse span, costs the walk what the page
// holds, not what its header claims: the walk reads its header and
// elements, not the span (before, it allocated the span whole, and marked
// each of its pages in a map).
func TestTheWalkReadsWhatAPageHoldsNotWhatItClaims(t *testing.T) {
	kd := makeDB(t, HistoryLimit)
	m := grownLeaf(t, kd, MaxRecordBytes, recordsOnly(t, 4))
	f, err := os.Open(kd.db)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, write := range []bool{false, true} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		err := precheckTree(f, m, write)
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatalf("write=%v: %v; want the page accepted", write, err)
		}
		if spent := after.TotalAlloc - before.TotalAlloc; spent > MaxRecordBytes/4 {
			t.Errorf("write=%v: the walk allocated %d bytes for a page of %d that claims %d", write, spent, m.PageSize, 4*MaxRecordBytes)
		}
	}
}

// What bbolt never writes, and this package never asks it to, is damage
// however sparse the file that claims it: a value over MaxRecordBytes
// (here 1 GiB: a writer's bbolt copies a value whole when it rewrites its
// page), a key over bbolt's MaxKeySize, and a node past a page holding
// more elements than bbolt leaves unsplit (five values of a whole record
// each, every one of which alone is taken). Before, each was accepted,
// and a writer rewriting the page copied gigabytes.
func TestAValueOrNodeBboltNeverWritesIsDamage(t *testing.T) {
	for _, c := range []struct {
		name  string
		vsize uint64
		grow  func(page []byte, ps uint64)
		want  string
	}{
		{"value of 1 GiB", 1 << 30, nil, "a value of 1073741824 bytes"},
		{"value past a record", MaxRecordBytes + 1, nil, "a value of 1048577 bytes"},
		{"key past bbolt's", 8, func(page []byte, ps uint64) {
			nativeEndian.PutUint32(page[pageHeaderSize+8:], maxKeyBytes+1)
		}, "a key of 32769 bytes"},
		{"five values of a record", MaxRecordBytes, recordsOnly(t, 5), "bbolt splits a node of more than 4 past a page"},
		// Four are what bbolt leaves unsplit: taken.
		{"four values of a record", MaxRecordBytes, recordsOnly(t, 4), ""},
		{"four and one small value", 8, func(page []byte, ps uint64) {
			recordsOnly(t, 5)(page, ps)
			nativeEndian.PutUint32(page[pageHeaderSize+4*elementSize+12:], 8)
		}, "bbolt splits a node of more than 4 past a page"},
	} {
		t.Run(c.name, func(t *testing.T) {
			kd := makeDB(t, HistoryLimit)
			m := grownLeaf(t, kd, c.vsize, c.grow)
			f, err := os.Open(kd.db)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			for _, write := range []bool{false, true} {
				err := precheckTree(f, m, write)
				switch {
				case c.want == "" && err != nil:
					t.Errorf("write=%v: %v; want it taken", write, err)
				case c.want != "" && (!errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), c.want)):
					t.Errorf("write=%v: %v; want ErrDamaged saying %q", write, err, c.want)
				}
			}
		})
	}
}

// A branch's key over bbolt's MaxKeySize is damage as a leaf's is, its
// span grown (into a sparse tail) to hold it.
func TestABranchKeyPastBboltsIsDamage(t *testing.T) {
	kd := makeDB(t, HistoryLimit)
	m, err := inspect(t, kd.db)
	if err != nil {
		t.Fatal(err)
	}
	ps := int64(m.PageSize)
	hwm := m.Pages[m.Active].Pgid
	branch := bucketPage(t, kd.db, bucketHistory, branchFlag)
	overflow := (maxKeyBytes+2*ps)/ps + 1
	setHighWater(t, kd.db, m, uint64(branch/ps+overflow+1)+hwm)
	writeAt(t, kd.db, branch+12, nativeEndian.AppendUint32(nil, uint32(overflow)))
	writeAt(t, kd.db, branch+pageHeaderSize+4, nativeEndian.AppendUint32(nil, maxKeyBytes+1))
	if m, err = inspect(t, kd.db); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(kd.db)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, write := range []bool{false, true} {
		if err := precheckTree(f, m, write); !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "element 0: a key of 32769 bytes") {
			t.Errorf("write=%v: %v; want ErrDamaged naming the key", write, err)
		}
	}
}

// recordsOnly keeps the first n elements of a leaf and makes each value a
// record (MaxRecordBytes), laid end to end as bbolt lays them.
func recordsOnly(t *testing.T, n uint64) func(page []byte, ps uint64) {
	return func(page []byte, ps uint64) {
		if count := uint64(nativeEndian.Uint16(page[10:])); count < n {
			t.Fatalf("the leaf has %d elements; the test wants %d or more", count, n)
		}
		nativeEndian.PutUint16(page[10:], uint16(n))
		end := pageHeaderSize + n*elementSize
		for i := range n {
			at := pageHeaderSize + i*elementSize
			e := page[at:]
			ksize := uint64(nativeEndian.Uint32(e[8:]))
			nativeEndian.PutUint32(e[4:], uint32(end-at))
			nativeEndian.PutUint32(e[12:], MaxRecordBytes)
			end += ksize + MaxRecordBytes
		}
	}
}
