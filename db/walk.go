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
	maxDepth       = 64   // far deeper than any tree a small file can hold
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
	mem  []byte // the file's pages, when they are in memory: f is not read
	ps   uint64
	hwm  uint64
	seen map[uint64]bool
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
	for id := freelist; id <= freelist+freelistOverflow; id++ {
		w.seen[id] = true
	}
	return w, w.page(p.Root, 0)
}

func (w *walker) page(id uint64, depth int) error {
	if depth > maxDepth {
		return damaged("page tree deeper than %d at page %d", maxDepth, id)
	}
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
	if flags != branchFlag && flags != leafFlag {
		return damaged("page %s has flags %#x, want a branch or a leaf", name, flags)
	}
	if flags == branchFlag && count == 0 {
		return damaged("branch page %s is empty", name)
	}
	if pageHeaderSize+count*elementSize > len(p) {
		return damaged("page %s: %d elements overrun its %d bytes", name, count, len(p))
	}
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
	inline := v[bucketHdrSize:]
	if len(inline) >= pageHeaderSize && nativeEndian.Uint16(inline[8:]) != leafFlag {
		return damaged("inline bucket %s is not a leaf page", name)
	}
	return w.node(inline, name, depth)
}
