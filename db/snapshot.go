package db

import (
	"bytes"
	"io"
	"os"

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

// snapshot is a meta.db's pages as its active meta page describes them,
// already checked: the pre-check's walk bounded every page and element, and
// readSnapshot has seen every bucket's keys ascend. Its buckets are read in
// place, never copied into elements of their own: a dump reads a handful of
// records out of each of 10,000 files, and allocating the 64 history
// entries of each was a tenth of its time.
type snapshot struct {
	pages     []byte // the file up to its high-water mark, for Check
	buckets   map[string]snapBucket
	rootEmpty bool // the root holds nothing: a schema 0 file
}

// snapBucket is a top-level bucket: its value in the root (a bucket header,
// then an inline page when its root is 0).
type snapBucket struct {
	r     *snapReader
	value []byte
}

// Get returns the value of key, nil for a nested bucket, as bbolt does.
//
// The walk is linear: meta/ holds two keys and sidecars/ six, so a binary
// search would save nothing. Its error is dropped because readSnapshot
// walked the same bucket with the same bounds and refused the file had any
// of them failed.
func (b snapBucket) Get(key []byte) []byte {
	var v []byte
	b.r.each(b.value, false, 0, func(k, val []byte, nested bool) bool {
		if bytes.Equal(k, key) {
			if !nested {
				v = val
			}
			return false
		}
		return true
	})
	return v
}

// descend visits the elements newest (highest key) first until fn returns
// false; a nested bucket's value is nil, as a bbolt cursor shows it.
func (b snapBucket) descend(fn func(k, v []byte) (more bool)) {
	b.r.each(b.value, true, 0, func(k, val []byte, nested bool) bool {
		if nested {
			val = nil
		}
		return fn(k, val)
	})
}

// readSnapshot reads the root of buf, a meta.db's pages the pre-check has
// accepted, and checks every top-level bucket once: every bound it relies
// on again, and that keys ascend (bbolt's binary searches assume it, so a
// file where they do not is damaged however bbolt would read it).
func readSnapshot(buf []byte, m MetaPages) (*snapshot, error) {
	r := &snapReader{buf: buf, ps: uint64(m.PageSize), hwm: m.Pages[m.Active].Pgid}
	s := &snapshot{pages: buf, buckets: map[string]snapBucket{}, rootEmpty: true}
	// The root bucket has no value of its own in the file, only the meta
	// page's root id: a bucket header made from it lets the one reader
	// below serve the root and every bucket in it.
	var rootHdr [bucketHdrSize]byte
	nativeEndian.PutUint64(rootHdr[:], m.Pages[m.Active].Root)
	if err := r.ascending(rootHdr[:], where{page: m.Pages[m.Active].Root}); err != nil {
		return nil, err
	}
	i := 0
	var err error
	r.each(rootHdr[:], false, 0, func(k, v []byte, nested bool) bool {
		s.rootEmpty = false
		if nested { // a plain value in the root is no bucket to bbolt
			if err = r.ascending(v, where{page: m.Pages[m.Active].Root, inline: true, elem: i}); err != nil {
				return false
			}
			s.buckets[string(k)] = snapBucket{r, v}
		}
		i++
		return true
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// snapReader reads a snapshot's pages in place. Each of its reads checks
// again the bounds the walk has passed: an index out of range here is a
// panic outside bbolt and outside any guard that expects one, and the
// decoder should not be safe only as long as the walk stays in step with it.
type snapReader struct {
	buf     []byte // the file up to its high-water mark
	ps, hwm uint64 // page size in bytes; high-water mark in pages
}

// ascending checks the tree of the bucket whose value is v: every page and
// element within bounds, every key above the one before it.
func (r *snapReader) ascending(v []byte, name where) error {
	var prev []byte
	var err error
	if e := r.each(v, false, 0, func(k, _ []byte, _ bool) bool {
		if prev != nil && bytes.Compare(prev, k) >= 0 {
			err = damaged("bucket %s: key %s does not follow key %s", name, keyHex(k), keyHex(prev))
			return false
		}
		prev = k
		return true
	}); e != nil {
		return e
	}
	return err
}

// each visits the elements of the bucket whose value is v in key order, or
// in reverse, until fn returns false. It returns an error for a page or
// element out of bounds.
func (r *snapReader) each(v []byte, reverse bool, depth int, fn func(k, v []byte, nested bool) bool) error {
	if len(v) < bucketHdrSize {
		return damaged("bucket value is %d bytes", len(v))
	}
	if root := nativeEndian.Uint64(v); root != 0 {
		_, err := r.page(root, reverse, depth, fn)
		return err
	}
	_, err := r.node(v[bucketHdrSize:], where{inline: true}, reverse, depth, fn)
	return err
}

// page visits the subtree at page id; more is false once fn has stopped.
func (r *snapReader) page(id uint64, reverse bool, depth int, fn func(k, v []byte, nested bool) bool) (more bool, err error) {
	if id < 2 || id >= r.hwm {
		return false, damaged("page %d is outside the file's pages 2..%d", id, r.hwm-1)
	}
	start := id * r.ps
	if start+pageHeaderSize > uint64(len(r.buf)) {
		return false, damaged("page %d is past the end of the file", id)
	}
	overflow := uint64(nativeEndian.Uint32(r.buf[start+12:])) // the header's u32 at byte 12
	end := start + (overflow+1)*r.ps
	if end > uint64(len(r.buf)) || id+overflow >= r.hwm {
		return false, damaged("page %d with %d overflow pages passes the end of the file", id, overflow)
	}
	return r.node(r.buf[start:end], where{page: id}, reverse, depth, fn)
}

// node visits one page (or an inline bucket's page) p, descending into the
// children of a branch.
func (r *snapReader) node(p []byte, name where, reverse bool, depth int, fn func(k, v []byte, nested bool) bool) (more bool, err error) {
	if depth > maxDepth {
		return false, damaged("page tree deeper than %d at page %s", maxDepth, name)
	}
	if len(p) < pageHeaderSize {
		return false, damaged("page %s is %d bytes", name, len(p))
	}
	flags := nativeEndian.Uint16(p[8:])
	count := int(nativeEndian.Uint16(p[10:]))
	if flags != branchFlag && flags != leafFlag {
		return false, damaged("page %s has flags %#x, want a branch or a leaf", name, flags)
	}
	if pageHeaderSize+count*elementSize > len(p) {
		return false, damaged("page %s: %d elements overrun its %d bytes", name, count, len(p))
	}
	for j := range count {
		i := j
		if reverse {
			i = count - 1 - j
		}
		at := pageHeaderSize + i*elementSize
		e := p[at : at+elementSize]
		if flags == branchFlag {
			if more, err := r.page(nativeEndian.Uint64(e[8:]), reverse, depth+1, fn); !more || err != nil {
				return false, err
			}
			continue
		}
		eflags := nativeEndian.Uint32(e[0:])
		pos, ksize, vsize := uint64(nativeEndian.Uint32(e[4:])), uint64(nativeEndian.Uint32(e[8:])), uint64(nativeEndian.Uint32(e[12:]))
		kstart := uint64(at) + pos
		if kstart+ksize+vsize > uint64(len(p)) {
			return false, damaged("page %s element %d: key and value at %d+%d+%d overrun the page", name, i, pos, ksize, vsize)
		}
		if !fn(p[kstart:kstart+ksize], p[kstart+ksize:kstart+ksize+vsize], eflags&bucketLeafFlag != 0) {
			return false, nil
		}
	}
	return true, nil
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
