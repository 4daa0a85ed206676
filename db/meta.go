package db

import (
	"encoding/binary"
	"hash/fnv"
	"io"
	"os"

	berrors "go.etcd.io/bbolt/errors"
)

// The on-disk layout of bbolt 1.5's pages (go.etcd.io/bbolt/internal/common).
// bbolt writes its structs in the machine's byte order.
const (
	boltMagic      = 0xED0CDAED
	boltVersion    = 2
	pageHeaderSize = 16 // id u64, flags u16, count u16, overflow u32
	metaSize       = 64 // magic, version, pageSize, flags u32; root {pgid, seq}; freelist, pgid, txid, checksum u64
	metaSumBytes   = 56 // the checksum covers the meta up to the checksum field
	freelistFlag   = 0x10
	metaPageFlag   = 0x04
	noFreelist     = ^uint64(0) // the freelist id of a file written with NoFreelistSync
	firstMetaRead  = 0x1000     // bbolt reads this much at offset 0 to find the page size
)

// nativeEndian reads bbolt's structs, which bbolt writes by casting them to
// bytes: a file is read back only on a machine of the same byte order.
var nativeEndian = binary.NativeEndian

// MetaPage is one of the two meta pages at the head of a bbolt file, as
// bbolt would see it.
type MetaPage struct {
	Offset   int64  // where the page starts in the file
	Err      error  // why bbolt would not use this page; nil if valid
	Magic    uint32 // 0xED0CDAED in every page bbolt wrote
	Version  uint32 // bbolt's file format version: 2 for bbolt 1.5
	PageSize uint32 // the page size the file was created with
	Flags    uint32 // unused by bbolt 1.5, which writes 0 and never reads it
	Root     uint64 // page id of the root bucket
	Sequence uint64 // the root bucket's sequence
	Freelist uint64 // page id of the freelist
	Pgid     uint64 // high-water mark, in pages
	Txid     uint64 // the transaction that wrote the page: the newer page wins
	Checksum uint64 // FNV-64a of the meta's fields before it
}

// Valid reports whether bbolt would accept the page.
func (p MetaPage) Valid() bool { return p.Err == nil }

// MetaPages is what InspectMeta found: both meta pages and the one bbolt
// would use. An Active page other than the one with the higher Txid means
// bbolt will silently fall back to the older commit.
type MetaPages struct {
	Size     int64       // the file size inspected
	PageSize int         // the page size bbolt would use; 0 if it would find none
	Pages    [2]MetaPage // at offset 0 and at offset PageSize
	Active   int         // index into Pages of the page bbolt would use; -1 if none
}

// HighWater is the file size the active page promises: bbolt reads any page
// below it, and reading one past the end of the file is SIGBUS.
func (m MetaPages) HighWater() int64 {
	if m.Active < 0 || m.PageSize == 0 {
		return 0
	}
	p := m.Pages[m.Active]
	// A damaged Pgid times the page size can wrap int64 round to a small
	// size that any file passes; saturated, it fails every file instead.
	if p.Pgid > uint64(1<<62)/uint64(m.PageSize) {
		return 1<<63 - 1
	}
	return int64(p.Pgid) * int64(m.PageSize)
}

// InspectMeta reads the two meta pages of the bbolt file f, of size bytes,
// the way bbolt 1.5 would when opening it, without mapping it. It returns
// what it found even when it also returns an error; the error wraps
// ErrDamaged when bbolt would refuse the file or would be killed by it: the
// file is empty, too short for two pages, has no valid meta page, or is
// shorter than the active page's high-water mark. A read of f that failed
// (an I/O error, not the end of the file) is returned as it is: it says
// nothing of the file.
func InspectMeta(f io.ReaderAt, size int64) (MetaPages, error) {
	m := MetaPages{Size: size, Active: -1}
	if size == 0 {
		return m, damaged("file is 0 bytes")
	}
	ps, err := bboltPageSize(f, size)
	if err != nil {
		return m, err
	}
	m.PageSize = ps
	for i := range m.Pages {
		if m.Pages[i], err = readMetaPage(f, int64(i*ps)); err != nil {
			return m, err
		}
	}

	// bbolt's DB.meta: the higher txid if valid, else the other if valid.
	// A torn write of the newer page leaves its checksum wrong, and bbolt
	// then quietly reads the commit before it; Active says which it will.
	a, b := 0, 1
	if m.Pages[1].Txid > m.Pages[0].Txid {
		a, b = 1, 0
	}
	switch {
	case m.Pages[a].Valid():
		m.Active = a
	case m.Pages[b].Valid():
		m.Active = b
	default:
		return m, damaged("no valid meta page: page 0: %v; page 1: %v", m.Pages[0].Err, m.Pages[1].Err)
	}
	if size < 2*int64(ps) {
		return m, damaged("file is %d bytes, too short for two %d-byte meta pages", size, ps)
	}
	// The active page's ids are what bbolt will follow: each must lie
	// under its high-water mark, read at the page size the file was found
	// to have. An active page that claims another size was not written
	// with this file's layout, and every offset it gives would be scaled
	// wrong.
	p := m.Pages[m.Active]
	switch {
	case int(p.PageSize) != ps:
		return m, damaged("meta page %d says page size %d, file uses %d", m.Active, p.PageSize, ps)
	case p.Root >= p.Pgid:
		return m, damaged("meta page %d: root page %d at or above high-water mark %d", m.Active, p.Root, p.Pgid)
	case p.Freelist >= p.Pgid && p.Freelist != noFreelist:
		return m, damaged("meta page %d: freelist page %d at or above high-water mark %d", m.Active, p.Freelist, p.Pgid)
	case size < m.HighWater():
		return m, damaged("file is %d bytes, below the high-water mark %d of meta page %d (txid %d)",
			size, m.HighWater(), m.Active, p.Txid)
	}
	return m, nil
}

// bboltPageSize mirrors bbolt's DB.getPageSize: the page size of a valid
// first meta page; else of a valid second meta page found by probing every
// power of two from 1 KiB; else, if either page was readable at all, the OS
// page size (bbolt's default).
func bboltPageSize(f io.ReaderAt, size int64) (int, error) {
	buf := make([]byte, firstMetaRead)
	readable := false
	n, err := f.ReadAt(buf, 0)
	switch {
	case err == nil && n == len(buf):
		readable = true
		if p := parseMetaPage(buf, 0); p.Valid() {
			return checkPageSize(p.PageSize)
		}
	case readFailed(err):
		return 0, err
	}
	// The probe is bbolt's getPageSizeFromSecondMeta step for step, bound
	// and quirks included: offsets 1 KiB << 0..14, stopping a KiB short of
	// the end, so that a file of two 1 KiB pages is never probed at all.
	// Probing otherwise would accept files bbolt refuses, or the reverse.
	for i := 0; i <= 14; i++ {
		pos := int64(1024) << i
		if pos >= size-1024 {
			break
		}
		n, err := f.ReadAt(buf, pos)
		if readFailed(err) {
			return 0, err
		}
		if (err == nil && n == len(buf)) || (err == io.EOF && int64(n) == size-pos) {
			readable = true
			if p := parseMetaPage(buf[:n], pos); p.Valid() {
				return checkPageSize(p.PageSize)
			}
		}
	}
	if readable {
		return os.Getpagesize(), nil
	}
	return 0, damaged("file is %d bytes and no meta page is readable", size)
}

// checkPageSize refuses page sizes this package never creates, naming the
// rule broken first: at least 1 KiB, at most 16 MiB, a power of two. A valid
// checksum over a page size of 0 or 3 would otherwise reach bbolt's
// arithmetic.
func checkPageSize(ps uint32) (int, error) {
	switch {
	case ps < 1024:
		return 0, damaged("page size %d is below 1 KiB", ps)
	case ps > 1<<24:
		return 0, damaged("page size %d is above 16 MiB", ps)
	case ps&(ps-1) != 0:
		return 0, damaged("page size %d is not a power of two", ps)
	}
	return int(ps), nil
}

// readMetaPage reads the meta page at off. A short read makes that page
// invalid, not the file: the other page may still be whole, and bbolt
// would open the file by it. A read that failed (an I/O error) is the
// error: it says nothing of the page, and taken for an invalid one it
// would open the file by its older commit (a resolve then cold-started
// the key as transcript-replaced) and make check report the page
// invalid, which --repair moves aside.
func readMetaPage(f io.ReaderAt, off int64) (MetaPage, error) {
	buf := make([]byte, pageHeaderSize+metaSize)
	n, err := f.ReadAt(buf, off)
	if readFailed(err) {
		return MetaPage{Offset: off, Err: err}, err
	}
	if n < len(buf) {
		return MetaPage{Offset: off, Err: io.ErrUnexpectedEOF}, nil
	}
	return parseMetaPage(buf, off), nil
}

// readFailed reports whether a ReadAt's error is the read failing, not
// the end of the file.
func readFailed(err error) bool {
	return err != nil && err != io.EOF && err != io.ErrUnexpectedEOF
}

// parseMetaPage decodes the meta that follows the page header in b and
// validates it as bbolt's Meta.Validate does, in the same order.
func parseMetaPage(b []byte, off int64) MetaPage {
	p := MetaPage{Offset: off}
	if len(b) < pageHeaderSize+metaSize {
		p.Err = io.ErrUnexpectedEOF
		return p
	}
	m := b[pageHeaderSize : pageHeaderSize+metaSize]
	p.Magic = nativeEndian.Uint32(m[0:])
	p.Version = nativeEndian.Uint32(m[4:])
	p.PageSize = nativeEndian.Uint32(m[8:])
	p.Flags = nativeEndian.Uint32(m[12:])
	p.Root = nativeEndian.Uint64(m[16:])
	p.Sequence = nativeEndian.Uint64(m[24:])
	p.Freelist = nativeEndian.Uint64(m[32:])
	p.Pgid = nativeEndian.Uint64(m[40:])
	p.Txid = nativeEndian.Uint64(m[48:])
	p.Checksum = nativeEndian.Uint64(m[56:])
	h := fnv.New64a()
	h.Write(m[:metaSumBytes])
	switch {
	case p.Magic != boltMagic:
		p.Err = berrors.ErrInvalid
	case p.Version != boltVersion:
		p.Err = berrors.ErrVersionMismatch
	case p.Checksum != h.Sum64():
		p.Err = berrors.ErrChecksum
	}
	return p
}
