package db

import (
	"fmt"
	"io"
)

// bbolt page flags and element layout (go.etcd.io/bbolt/internal/common).
const (
	branchFlag     = 0x01
	leafFlag       = 0x02
	bucketLeafFlag = 0x01 // a leaf element whose value is a bucket
	elementSize    = 16   // branch: pos, ksize u32, pgid u64; leaf: flags, pos, ksize, vsize u32
	bucketHdrSize  = 16   // a bucket value: root pgid u64, sequence u64, then an inline page if root is 0
	// maxDepth bounds the recursion over a damaged tree (a long chain of
	// one-child branches) before it can exhaust the stack. No real tree
	// comes near it: bbolt keeps two children per branch or more, so depth
	// 64 would take 2^63 leaf pages.
	maxDepth = 64
)

// walker checks the page tree of a bbolt file the way bbolt will traverse
// it, reading pages with ReadAt instead of through a mapping. Recover cannot
// make bbolt safe against every damaged page: a branch element that points
// back at an ancestor sends bbolt's cursor round forever, growing its stack
// until the process dies of an out-of-memory error, and no recover catches
// that. So every page reachable from the root is read once (a second visit
// is a cycle or a shared page, both damage), and every offset is checked
// against the page it points into.
type walker struct {
	f    io.ReaderAt
	mem  []byte          // the file's pages, when they are in memory: f is not read
	ps   uint64          // page size, bytes
	hwm  uint64          // the active meta page's high-water mark, in pages
	seen map[uint64]bool // every page visited, and the freelist's
}

// walkTree checks the tree under the active meta page of m, and that it does
// not reach the freelist's pages.
// The walker it returns knows every page the tree and the freelist take.
func walkTree(f io.ReaderAt, m MetaPages, freelist, freelistOverflow uint64) (*walker, error) {
	p := m.Pages[m.Active]
	w := &walker{f: f, ps: uint64(m.PageSize), hwm: p.Pgid, seen: map[uint64]bool{}}
	if mem, ok := f.(memPages); ok {
		w.mem = mem
	}
	// The freelist's pages count as visited: a tree that reaches one is
	// refused as a page reached twice, since bbolt rewrites the freelist
	// at every commit, over whatever the tree kept there.
	for id := freelist; id <= freelist+freelistOverflow; id++ {
		w.seen[id] = true
	}
	return w, w.page(p.Root, 0)
}

func (w *walker) page(id uint64, depth int) error {
	if depth > maxDepth {
		return damaged("page tree deeper than %d at page %d", maxDepth, id)
	}
	// Pages 0 and 1 are the meta pages, and a page at or above the
	// high-water mark may lie past the end of the file, where bbolt's read
	// through its mapping would be SIGBUS.
	if id < 2 || id >= w.hwm {
		return damaged("page %d is outside the file's pages 2..%d", id, w.hwm-1)
	}
	if w.seen[id] {
		return damaged("page %d is reached twice (a cycle, or shared with another page)", id)
	}
	var hdr [pageHeaderSize]byte
	if _, err := w.readAt(hdr[:], id*w.ps); err != nil {
		return damagedBy(fmt.Sprintf("read page %d", id), err)
	}
	pid := nativeEndian.Uint64(hdr[0:])
	overflow := uint64(nativeEndian.Uint32(hdr[12:]))
	// bbolt reads a page at its offset and never compares the id in its
	// header: one that names another page was written for another place
	// (a misdirected or stale write), and its elements cannot be trusted.
	if pid != id {
		return damaged("page %d says it is page %d", id, pid)
	}
	if id+overflow >= w.hwm {
		return damaged("page %d with %d overflow pages passes the high-water mark %d", id, overflow, w.hwm)
	}
	for o := id; o <= id+overflow; o++ {
		if w.seen[o] {
			return damaged("page %d overlaps page %d", id, o)
		}
		w.seen[o] = true
	}
	// In memory the span is sliced in place: the walk visits every page of
	// the tree once per open, and copying each would allocate most of the
	// file a second time.
	var buf []byte
	if start, end := id*w.ps, (id+overflow+1)*w.ps; w.mem != nil && end <= uint64(len(w.mem)) {
		buf = w.mem[start:end]
	} else {
		buf = make([]byte, (overflow+1)*w.ps)
		if _, err := w.readAt(buf, id*w.ps); err != nil {
			return damagedBy(fmt.Sprintf("read page %d", id), err)
		}
	}
	return w.node(buf, where{page: id}, depth)
}

func (w *walker) readAt(b []byte, off uint64) (int, error) {
	if w.mem != nil {
		return memPages(w.mem).ReadAt(b, int64(off))
	}
	return w.f.ReadAt(b, int64(off))
}

// memPages is a file's pages read into memory, which the walker reads in
// place instead of copying.
type memPages []byte

// ReadAt is io.ReaderAt's: a read short of len(b) returns io.EOF, which the
// pre-check takes for a file shorter than its pages claim.
func (m memPages) ReadAt(b []byte, off int64) (int, error) {
	if off < 0 || off > int64(len(m)) {
		return 0, io.EOF
	}
	n := copy(b, m[off:])
	if n < len(b) {
		return n, io.EOF
	}
	return n, nil
}

// node checks one branch or leaf page, p being its whole span (or, for an
// inline bucket, the rest of the value). Element positions are relative to
// the element itself, as bbolt reads them.
func (w *walker) node(p []byte, name where, depth int) error {
	if len(p) < pageHeaderSize {
		return damaged("page %s is %d bytes", name, len(p))
	}
	flags := nativeEndian.Uint16(p[8:])
	count := int(nativeEndian.Uint16(p[10:]))
	// Exact values, stricter than bbolt's bit tests: bbolt gives a page one
	// flag, so a page with two, or a meta or freelist page inside the
	// tree, is damage however bbolt would read it.
	if flags != branchFlag && flags != leafFlag {
		return damaged("page %s has flags %#x, want a branch or a leaf", name, flags)
	}
	// bbolt's searchPage takes element 0 of a branch without looking at
	// the count: an empty branch would send its cursor to a page id read
	// from whatever follows the header.
	if flags == branchFlag && count == 0 {
		return damaged("branch page %s is empty", name)
	}
	if pageHeaderSize+count*elementSize > len(p) {
		return damaged("page %s: %d elements overrun its %d bytes", name, count, len(p))
	}
	// Offsets are summed in uint64: each is a u32 from the page, so no sum
	// of three can wrap round to pass the bound.
	for i := range count {
		at := pageHeaderSize + i*elementSize
		e := p[at : at+elementSize]
		if flags == branchFlag {
			pos, ksize := uint64(nativeEndian.Uint32(e[0:])), uint64(nativeEndian.Uint32(e[4:]))
			if uint64(at)+pos+ksize > uint64(len(p)) {
				return damaged("page %s element %d: key at %d+%d overruns the page", name, i, pos, ksize)
			}
			if err := w.page(nativeEndian.Uint64(e[8:]), depth+1); err != nil {
				return err
			}
			continue
		}
		eflags := nativeEndian.Uint32(e[0:])
		pos, ksize, vsize := uint64(nativeEndian.Uint32(e[4:])), uint64(nativeEndian.Uint32(e[8:])), uint64(nativeEndian.Uint32(e[12:]))
		start := uint64(at) + pos
		if start+ksize+vsize > uint64(len(p)) {
			return damaged("page %s element %d: key and value at %d+%d+%d overrun the page", name, i, pos, ksize, vsize)
		}
		if eflags&bucketLeafFlag != 0 {
			v := p[start+ksize : start+ksize+vsize]
			if err := w.bucket(v, where{page: name.page, inline: true, elem: i}, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// where names a page in an error: a page by its id, or an inline bucket by
// the page and element that hold it.
type where struct {
	page   uint64
	inline bool
	elem   int
}

func (w where) String() string {
	if w.inline {
		return fmt.Sprintf("inline %d/%d", w.page, w.elem)
	}
	return fmt.Sprint(w.page)
}

// bucket checks a bucket value: a root page, or an inline leaf page stored
// in the value itself.
func (w *walker) bucket(v []byte, name where, depth int) error {
	if len(v) < bucketHdrSize {
		return damaged("bucket value %s is %d bytes", name, len(v))
	}
	if root := nativeEndian.Uint64(v); root != 0 {
		return w.page(root, depth)
	}
	// bbolt reads an inline bucket's page with the flags it carries, and a
	// branch flag there would send its cursor to page ids read from inside
	// the value: bbolt only ever writes an inline bucket as one leaf.
	inline := v[bucketHdrSize:]
	if len(inline) >= pageHeaderSize && nativeEndian.Uint16(inline[8:]) != leafFlag {
		return damaged("inline bucket %s is not a leaf page", name)
	}
	return w.node(inline, name, depth)
}
