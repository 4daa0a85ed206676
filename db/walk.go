package db

import (
	"cmp"
	"fmt"
	"io"
	"slices"

	bolt "go.etcd.io/bbolt"
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
	// maxKeyBytes is bbolt's MaxKeySize: bbolt refuses to put a longer key.
	maxKeyBytes = bolt.MaxKeySize
	// maxUnsplit is the most elements a node bbolt writes holds once it
	// takes more than a page: bbolt splits a node of more than a page and
	// more elements (node.splitTwo), into parts each under a page, or of
	// two elements (a first part's least), or of at most this many (the
	// rest, which it leaves unsplit).
	maxUnsplit = 4
)

// walker checks the page tree of a bbolt file the way bbolt will traverse
// it, reading pages with ReadAt instead of through a mapping. Recover cannot
// make bbolt safe against every damaged page: a branch element that points
// back at an ancestor sends bbolt's cursor round forever, growing its stack
// until the process dies of an out-of-memory error, and no recover catches
// that. So every page reachable from the root is read once (a second visit
// is a cycle or a shared page, both damage), and every offset is checked
// against the page it points into.
//
// What the walk spends is bounded by what the file holds, not by what its
// headers claim: a page's overflow count (up to 2^32 pages, a sparse file
// of 16 TiB) sizes no allocation and no loop. A page is kept as one span,
// and only its header, its elements and its bucket values are read.
// Before, a freelist header that claimed 2^32-1 overflow pages in such a
// file marked each page in a map, and resolve died of an out-of-memory
// error.
type walker struct {
	f     io.ReaderAt
	mem   []byte            // the file's pages, when they are in memory: f is not read
	ps    uint64            // page size, bytes
	hwm   uint64            // the active meta page's high-water mark, in pages
	spans map[uint64]uint64 // every page visited, and the freelist: its id to its last page
	taken []pageRun         // spans, by first page, once the walk is over
}

// pageRun is a page and its overflow pages, first to last.
type pageRun struct{ first, last uint64 }

// walkTree checks the tree under the active meta page of m, and that it does
// not reach the freelist's pages.
// The walker it returns knows every page the tree and the freelist take.
func walkTree(f io.ReaderAt, m MetaPages, freelist, freelistOverflow uint64) (*walker, error) {
	p := m.Pages[m.Active]
	w := &walker{f: f, ps: uint64(m.PageSize), hwm: p.Pgid, spans: map[uint64]uint64{}}
	if mem, ok := f.(memPages); ok {
		w.mem = mem
	}
	// The freelist's pages count as visited: a tree that reaches one is
	// refused as a page reached twice or an overlap, since bbolt rewrites
	// the freelist at every commit, over whatever the tree kept there.
	w.spans[freelist] = freelist + freelistOverflow
	if err := w.page(p.Root, 0); err != nil {
		return w, err
	}
	return w, w.noOverlap()
}

// noOverlap checks, once every span is known, that no two share a page: a
// branch that points into another page's overflow (its own header there
// made to match) is a page reached twice.
func (w *walker) noOverlap() error {
	w.taken = make([]pageRun, 0, len(w.spans))
	for first, last := range w.spans {
		w.taken = append(w.taken, pageRun{first, last})
	}
	slices.SortFunc(w.taken, func(a, b pageRun) int { return cmp.Compare(a.first, b.first) })
	for i := 1; i < len(w.taken); i++ {
		if prev := w.taken[i-1]; w.taken[i].first <= prev.last {
			return damaged("page %d overlaps page %d", prev.first, w.taken[i].first)
		}
	}
	return nil
}

// inUse reports whether page id lies in a span the walk took.
func (w *walker) inUse(id uint64) bool {
	i, found := slices.BinarySearchFunc(w.taken, id, func(r pageRun, id uint64) int { return cmp.Compare(r.first, id) })
	return found || (i > 0 && id <= w.taken[i-1].last)
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
	if _, seen := w.spans[id]; seen {
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
	w.spans[id] = id + overflow
	span := pageSpan{w: w, off: id * w.ps, size: (overflow + 1) * w.ps}
	if start, end := span.off, span.off+span.size; w.mem != nil && end <= uint64(len(w.mem)) {
		// In memory the span is sliced in place: the walk visits every
		// page of the tree once per open, and copying each would allocate
		// most of the file a second time.
		span.head = w.mem[start:end]
	} else {
		// From the file, the first page, or the elements if they take
		// more: never the whole span, which the header sizes.
		count := uint64(nativeEndian.Uint16(hdr[10:]))
		span.head = make([]byte, min(span.size, max(w.ps, pageHeaderSize+count*elementSize)))
		if _, err := w.readAt(span.head, span.off); err != nil {
			return damagedBy(fmt.Sprintf("read page %d", id), err)
		}
	}
	return w.node(span, where{page: id}, depth)
}

// pageSpan is a page with its overflow pages: size bytes at off in the
// file, of which head, from the start, is read; it holds at least the
// header and the elements where the span does.
type pageSpan struct {
	w         *walker
	off, size uint64
	head      []byte
}

// bytes returns n bytes of the span from offset from, which the caller has
// checked lie in it: from head, or read from the file.
func (s pageSpan) bytes(from, n uint64) ([]byte, error) {
	if from+n <= uint64(len(s.head)) {
		return s.head[from : from+n], nil
	}
	b := make([]byte, n)
	_, err := s.w.readAt(b, s.off+from)
	return b, err
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

// node checks one branch or leaf page, s being its whole span (or, for an
// inline bucket, the rest of the value). Element positions are relative to
// the element itself, as bbolt reads them.
func (w *walker) node(s pageSpan, name where, depth int) error {
	p := s.head
	if s.size < pageHeaderSize {
		return damaged("page %s is %d bytes", name, s.size)
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
	if uint64(pageHeaderSize+count*elementSize) > s.size {
		return damaged("page %s: %d elements overrun its %d bytes", name, count, s.size)
	}
	// Offsets are summed in uint64: each is a u32 from the page, so no sum
	// of three can wrap round to pass the bound.
	used := uint64(pageHeaderSize + count*elementSize) // to the end of the last key or value
	for i := range count {
		at := pageHeaderSize + i*elementSize
		e := p[at : at+elementSize]
		if flags == branchFlag {
			pos, ksize := uint64(nativeEndian.Uint32(e[0:])), uint64(nativeEndian.Uint32(e[4:]))
			if uint64(at)+pos+ksize > s.size {
				return damaged("page %s element %d: key at %d+%d overruns the page", name, i, pos, ksize)
			}
			if ksize > maxKeyBytes {
				return damaged("page %s element %d: a key of %d bytes; bbolt takes none over %d", name, i, ksize, maxKeyBytes)
			}
			used = max(used, uint64(at)+pos+ksize)
			if err := w.page(nativeEndian.Uint64(e[8:]), depth+1); err != nil {
				return err
			}
			continue
		}
		eflags := nativeEndian.Uint32(e[0:])
		pos, ksize, vsize := uint64(nativeEndian.Uint32(e[4:])), uint64(nativeEndian.Uint32(e[8:])), uint64(nativeEndian.Uint32(e[12:]))
		start := uint64(at) + pos
		if start+ksize+vsize > s.size {
			return damaged("page %s element %d: key and value at %d+%d+%d overrun the page", name, i, pos, ksize, vsize)
		}
		switch {
		case ksize > maxKeyBytes:
			return damaged("page %s element %d: a key of %d bytes; bbolt takes none over %d", name, i, ksize, maxKeyBytes)
		case eflags&bucketLeafFlag == 0 && vsize > MaxRecordBytes:
			return damaged("page %s element %d: a value of %d bytes; this package writes none over %d", name, i, vsize, MaxRecordBytes)
		}
		used = max(used, start+ksize+vsize)
		if eflags&bucketLeafFlag != 0 {
			// bbolt inlines a bucket only while it is under a quarter
			// page, so a larger value is damage, and reading it is
			// bounded by the page size, not by the header.
			if vsize > bucketHdrSize+w.ps/4 {
				return damaged("page %s element %d: a bucket value of %d bytes; bbolt inlines only a bucket under a quarter page", name, i, vsize)
			}
			v, err := s.bytes(start+ksize, vsize)
			if err != nil {
				return damagedBy(fmt.Sprintf("read page %s element %d", name, i), err)
			}
			if err := w.bucket(v, where{page: name.page, inline: true, elem: i}, depth+1); err != nil {
				return err
			}
		}
	}
	// bbolt gives a node the pages it takes, so a span far past its last
	// key or value is damage, and would cost what it claims: a writer's
	// bbolt frees each of its pages, one id at a time, when it rewrites
	// the node.
	if need := (used + w.ps - 1) / w.ps; !name.inline && s.size/w.ps > 2*need+1 {
		return damaged("page %s spans %d pages; its elements take %d bytes", name, s.size/w.ps, used)
	}
	// Nor does bbolt write a node of more than a page with more elements
	// than it leaves unsplit: thousands of elements, each claiming the
	// most a value may be, would make a span of gigabytes again.
	if count > maxUnsplit && used > w.ps {
		return damaged("page %s: its %d elements take %d bytes; bbolt splits a node of more than %d past a page", name, count, used, maxUnsplit)
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
	return w.node(pageSpan{w: w, size: uint64(len(inline)), head: inline}, name, depth)
}
