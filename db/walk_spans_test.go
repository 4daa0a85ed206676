package db

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// A bucket value longer than a quarter page and its header is damage: bbolt
// inlines only a bucket under a quarter page, and the walk reads a bucket
// value whole, so the bound is what keeps that read to a page.
func TestABucketValuePastWhatBboltInlinesIsDamage(t *testing.T) {
	kd := makeDB(t, 3)
	m, err := inspect(t, kd.db)
	if err != nil {
		t.Fatal(err)
	}
	ps := int64(m.PageSize)
	root := int64(m.Pages[m.Active].Root) * ps
	page := readFile(t, kd.db)[root : root+ps]
	if flags := nativeEndian.Uint16(page[8:]); flags != leafFlag {
		t.Fatalf("the root page has flags %#x, want a leaf of buckets", flags)
	}
	// The first bucket's value grown to a quarter page and 17 bytes: within
	// the page still, so only the bound refuses it.
	e := page[pageHeaderSize:]
	pos, ksize := int64(nativeEndian.Uint32(e[4:])), int64(nativeEndian.Uint32(e[8:]))
	vsize := bucketHdrSize + ps/4 + 1
	if pageHeaderSize+pos+ksize+vsize > ps {
		t.Fatalf("the first bucket's key ends at %d: no room in the page for a value of %d", pageHeaderSize+pos+ksize, vsize)
	}
	writeAt(t, kd.db, root+pageHeaderSize+12, nativeEndian.AppendUint32(nil, uint32(vsize)))
	for _, write := range []bool{false, true} {
		if err := openAndRead(kd, write); !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "bbolt inlines only") {
			t.Errorf("write=%v: %v; want ErrDamaged saying a bucket value that large is none bbolt inlines", write, err)
		}
	}
}

// A page whose overflow takes in another page the walk takes (the tree's,
// or the freelist) is two pages sharing one: damage, found once every span
// is known.
func TestAPageWhoseSpanTakesInAnotherIsDamage(t *testing.T) {
	kd := makeDB(t, HistoryLimit)
	m, err := inspect(t, kd.db)
	if err != nil {
		t.Fatal(err)
	}
	p := m.Pages[m.Active]
	ps := uint64(m.PageSize)
	branch := uint64(bucketPage(t, kd.db, bucketHistory, branchFlag)) / ps
	data := readFile(t, kd.db)
	taken := map[uint64]bool{p.Root: true, p.Freelist: true, branch: true}
	var leaves []uint64
	for i := range uint64(nativeEndian.Uint16(data[branch*ps+10:])) {
		leaf := nativeEndian.Uint64(data[branch*ps+pageHeaderSize+i*elementSize+8:])
		leaves, taken[leaf] = append(leaves, leaf), true
	}
	// A leaf one or two pages below another taken page: its span grown to
	// that page stays within the span rule (three pages for one page's
	// elements), so only the overlap refuses it.
	for _, leaf := range leaves {
		for gap := uint64(1); gap <= 2; gap++ {
			if !taken[leaf+gap] {
				continue
			}
			writeAt(t, kd.db, int64(leaf*ps+12), nativeEndian.AppendUint32(nil, uint32(gap)))
			for _, write := range []bool{false, true} {
				if err := openAndRead(kd, write); !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "overlaps page") {
					t.Errorf("write=%v: leaf %d grown over page %d: %v; want ErrDamaged saying a page overlaps another", write, leaf, leaf+gap, err)
				}
			}
			return
		}
	}
	t.Fatalf("no history leaf lies one or two pages below another taken page: leaves %v, root %d, freelist %d", leaves, p.Root, p.Freelist)
}

// What a span's head does not hold is read from the file, at the span's
// offset; what it holds is sliced from it.
func TestAPageSpanReadsPastItsHeadFromTheFile(t *testing.T) {
	file := make([]byte, 100)
	for i := range file {
		file[i] = byte(i) // no two offsets alike
	}
	w := &walker{f: bytes.NewReader(file)}
	s := pageSpan{w: w, off: 20, size: 60, head: file[20:30]}
	for _, c := range []struct{ from, n uint64 }{{0, 10}, {2, 5}, {8, 10}, {10, 20}, {40, 20}} {
		got, err := s.bytes(c.from, c.n)
		if want := file[20+c.from : 20+c.from+c.n]; err != nil || !bytes.Equal(got, want) {
			t.Errorf("bytes(%d, %d) = %q, %v; want %q", c.from, c.n, got, err, want)
		}
	}
}
