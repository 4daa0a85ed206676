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

// A page the walk accepts, whose last value ends 1 GiB into a sparse span,
// costs the walk what the page holds, not what its header claims: the walk
// reads its header and elements, not the span (before, it allocated the
// span whole, and marked each of its pages in a map).
func TestTheWalkReadsWhatAPageHoldsNotWhatItClaims(t *testing.T) {
	kd := makeDB(t, HistoryLimit)
	m, err := inspect(t, kd.db)
	if err != nil {
		t.Fatal(err)
	}
	ps := uint64(m.PageSize)
	branch := uint64(bucketPage(t, kd.db, bucketHistory, branchFlag)) / ps
	data := readFile(t, kd.db)
	leaf := nativeEndian.Uint64(data[branch*ps+pageHeaderSize+8:])
	// The branch's first leaf, copied to a page past the high-water mark
	// with its last value grown to end 1 GiB in, the branch pointed at it.
	page := append([]byte(nil), data[leaf*ps:(leaf+1)*ps]...)
	if nativeEndian.Uint32(page[12:]) != 0 {
		t.Fatal("the history leaf has overflow pages; the test wants a page of one")
	}
	count := uint64(nativeEndian.Uint16(page[10:]))
	last := pageHeaderSize + (count-1)*elementSize
	pos, ksize := uint64(nativeEndian.Uint32(page[last+4:])), uint64(nativeEndian.Uint32(page[last+8:]))
	const used = 1 << 30
	nativeEndian.PutUint32(page[last+12:], uint32(used-last-pos-ksize))
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
		if spent := after.TotalAlloc - before.TotalAlloc; spent > 4<<20 {
			t.Errorf("write=%v: the walk allocated %d bytes for a page of %d that claims %d", write, spent, ps, uint64(used))
		}
	}
}

// A check does not copy a file whose pages span more than it copies into
// memory: a high-water mark raised over a sparse tail (2 GiB here, of
// pages nothing reaches) is an error, which proves nothing about the file,
// not a copy of 2 GiB, twice (read, and into the in-memory file bbolt
// maps), nor damage.
func TestACheckCopiesNoMoreThanItsBound(t *testing.T) {
	kd := makeDB(t, 3)
	m, err := inspect(t, kd.db)
	if err != nil {
		t.Fatal(err)
	}
	setHighWater(t, kd.db, m, (2<<30)/uint64(m.PageSize))
	r, err := OpenReader(kd.dir, kd.db, testOpts)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	problems, err := r.Check(20)
	runtime.ReadMemStats(&after)
	if err == nil || errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "more than the check copies") {
		t.Errorf("Check = %d problems, %v; want an error that says the pages span more than the check copies", len(problems), err)
	}
	if spent := after.TotalAlloc - before.TotalAlloc; spent > 4<<20 {
		t.Errorf("the check allocated %d bytes", spent)
	}
}
