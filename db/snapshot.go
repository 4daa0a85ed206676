package db

import (
	"bytes"
	"io"
	"os"
	"slices"

	bolt "go.etcd.io/bbolt"
)

// A reader does not map meta.db through bbolt. Under its shared lock it
// reads the file's pages with one pread, runs the pre-check over them,
// and decodes the few records it needs straight from the pages the pre-check
// has just walked. A meta.db is a few kilobytes, and bbolt's open (a read
// for the page size, an mmap, a meta read, allocations, a munmap at close)
// cost a reader several times what its records do: a dump of 10,000 keys
// spent most of its time there. The lock is held until Close, so no writer
// can change the file while the snapshot stands for it.
//
// Writers, and files larger than snapshotLimit, still go through bbolt.

// snapshotLimit is the largest span of pages (the high-water mark) a
// reader reads into memory. A file this package writes stays far below it:
// the records are bounded, and so is the history ring.
const snapshotLimit = 1 << 20

// readPrefix reads the first size bytes of f.
func readPrefix(f *os.File, size int64) ([]byte, error) {
	buf := make([]byte, size)
	if _, err := f.ReadAt(buf, 0); err != nil {
		if err == io.EOF {
			// The file shrank under a lock that forbids writers: damage
			// out of band, not a race.
			return nil, damaged("file shrank below %d bytes while locked", size)
		}
		return nil, err
	}
	return buf, nil
}

// snapshot is the tree of a meta.db as its active meta page describes it:
// the top-level buckets and, for each, its elements in key order.
type snapshot struct {
	buckets   map[string]snapBucket
	rootEmpty bool // the root holds nothing: a schema 0 file
}

// snapBucket is one top-level bucket: its elements in key order. raw holds
// each element's value as stored; a nested bucket's is its bucket header,
// and Get and descend show it as nil, as bbolt does.
type snapBucket []snapElem

type snapElem struct {
	key, raw []byte
	nested   bool
}

func (e *snapElem) value() []byte {
	if e.nested {
		return nil
	}
	return e.raw
}

func (b snapBucket) Get(key []byte) []byte {
	// The buckets this package reads hold a handful of keys, except
	// history/, which is only ever walked in order.
	for i := range b {
		if bytes.Equal(b[i].key, key) {
			return b[i].value()
		}
	}
	return nil
}

func (b snapBucket) descend(fn func(k, v []byte) (more bool)) {
	for i := len(b) - 1; i >= 0; i-- {
		if !fn(b[i].key, b[i].value()) {
			return
		}
	}
}

// readSnapshot decodes the tree of buf, a whole meta.db the pre-check has
// accepted. It checks again every bound it relies on, and that keys ascend
// (bbolt's binary searches assume it, so a file where they do not is
// damaged however bbolt would read it).
func readSnapshot(buf []byte, m MetaPages) (*snapshot, error) {
	r := &snapReader{buf: buf, ps: uint64(m.PageSize), hwm: m.Pages[m.Active].Pgid}
	var root snapBucket
	if err := r.tree(m.Pages[m.Active].Root, &root, 0); err != nil {
		return nil, err
	}
	s := &snapshot{buckets: make(map[string]snapBucket, len(root)), rootEmpty: len(root) == 0}
	for i, e := range root {
		if !e.nested { // a plain value in the root is no bucket to bbolt
			continue
		}
		var b snapBucket
		if err := r.bucket(e.raw, where{page: m.Pages[m.Active].Root, inline: true, elem: i}, &b, 1); err != nil {
			return nil, err
		}
		s.buckets[string(e.key)] = b
	}
	return s, nil
}

type snapReader struct {
	buf     []byte
	ps, hwm uint64
}

// tree appends the elements of the B+tree rooted at page id to b.
func (r *snapReader) tree(id uint64, b *snapBucket, depth int) error {
	if id < 2 || id >= r.hwm {
		return damaged("page %d is outside the file's pages 2..%d", id, r.hwm-1)
	}
	start := id * r.ps
	if start+pageHeaderSize > uint64(len(r.buf)) {
		return damaged("page %d is past the end of the file", id)
	}
	overflow := uint64(nativeEndian.Uint32(r.buf[start+12:]))
	end := start + (overflow+1)*r.ps
	if end > uint64(len(r.buf)) || id+overflow >= r.hwm {
		return damaged("page %d with %d overflow pages passes the end of the file", id, overflow)
	}
	return r.node(r.buf[start:end], where{page: id}, b, depth)
}

// node appends the elements of one page (or inline bucket page) p to b,
// descending into the children of a branch.
func (r *snapReader) node(p []byte, name where, b *snapBucket, depth int) error {
	if depth > maxDepth {
		return damaged("page tree deeper than %d at page %s", maxDepth, name)
	}
	if len(p) < pageHeaderSize {
		return damaged("page %s is %d bytes", name, len(p))
	}
	flags := nativeEndian.Uint16(p[8:])
	count := int(nativeEndian.Uint16(p[10:]))
	if flags != branchFlag && flags != leafFlag {
		return damaged("page %s has flags %#x, want a branch or a leaf", name, flags)
	}
	if pageHeaderSize+count*elementSize > len(p) {
		return damaged("page %s: %d elements overrun its %d bytes", name, count, len(p))
	}
	if flags == leafFlag {
		*b = slices.Grow(*b, count)
	}
	for i := range count {
		at := pageHeaderSize + i*elementSize
		e := p[at : at+elementSize]
		if flags == branchFlag {
			if err := r.tree(nativeEndian.Uint64(e[8:]), b, depth+1); err != nil {
				return err
			}
			continue
		}
		eflags := nativeEndian.Uint32(e[0:])
		pos, ksize, vsize := uint64(nativeEndian.Uint32(e[4:])), uint64(nativeEndian.Uint32(e[8:])), uint64(nativeEndian.Uint32(e[12:]))
		kstart := uint64(at) + pos
		if kstart+ksize+vsize > uint64(len(p)) {
			return damaged("page %s element %d: key and value at %d+%d+%d overrun the page", name, i, pos, ksize, vsize)
		}
		k := p[kstart : kstart+ksize]
		if n := len(*b); n > 0 && bytes.Compare((*b)[n-1].key, k) >= 0 {
			return damaged("page %s element %d: key %x does not follow key %x", name, i, k, (*b)[n-1].key)
		}
		*b = append(*b, snapElem{key: k, raw: p[kstart+ksize : kstart+ksize+vsize], nested: eflags&bucketLeafFlag != 0})
	}
	return nil
}

// bucket reads the elements of a top-level bucket from its value: a root
// page, or an inline leaf page stored in the value itself.
func (r *snapReader) bucket(v []byte, name where, b *snapBucket, depth int) error {
	if len(v) < bucketHdrSize {
		return damaged("bucket value %s is %d bytes", name, len(v))
	}
	if root := nativeEndian.Uint64(v); root != 0 {
		return r.tree(root, b, depth)
	}
	return r.node(v[bucketHdrSize:], name, b, depth)
}

// bucketView is what a Tx reads a top-level bucket through: bbolt's bucket
// for a writer, a snapBucket for a reader.
type bucketView interface {
	Get(key []byte) []byte
	descend(fn func(k, v []byte) (more bool))
}

// boltView adapts a bbolt bucket.
type boltView struct{ b *bolt.Bucket }

func (v boltView) Get(key []byte) []byte { return v.b.Get(key) }

func (v boltView) descend(fn func(k, v []byte) bool) {
	c := v.b.Cursor()
	for k, val := c.Last(); k != nil; k, val = c.Prev() {
		if !fn(k, val) {
			return
		}
	}
}

// rootView is the top of a file: its buckets by name, nil when absent.
type rootView interface {
	bucket(name string) bucketView
	empty() bool
}

func (s *snapshot) bucket(name string) bucketView {
	if b, ok := s.buckets[name]; ok {
		return b
	}
	return nil
}

func (s *snapshot) empty() bool { return s.rootEmpty }

type boltRoot struct{ tx *bolt.Tx }

func (r boltRoot) bucket(name string) bucketView {
	if b := r.tx.Bucket([]byte(name)); b != nil {
		return boltView{b}
	}
	return nil
}

func (r boltRoot) empty() bool {
	k, _ := r.tx.Cursor().First()
	return k == nil
}
