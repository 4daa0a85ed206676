package db

import (
	"errors"
	"fmt"
	"io"
)

// precheckTree is what runs under the file lock before bbolt maps the
// file, once InspectMeta has accepted m: the freelist page and the page
// tree (see walker). A writer's bbolt.Open reads the freelist straight
// away: a garbage count there sizes a slice copy, and an allocation of
// terabytes is a fatal out-of-memory error, not a panic (measured: 1<<40
// ids kills a guarded bbolt.Open). A file without a synced freelist makes
// bbolt rebuild it in a goroutine of its own, beyond the reach of this
// package's recover. f needs to hold only the pages under the high-water
// mark. For a writer it also checks the ids on the freelist, which only a
// writer's bbolt reads.
func precheckTree(f io.ReaderAt, m MetaPages, write bool) error {
	p := m.Pages[m.Active]
	if p.Freelist == noFreelist {
		return damaged("meta page %d has no synced freelist; this package always syncs it", m.Active)
	}
	ps := int64(m.PageSize)
	// The header and the first id: a count of 0xFFFF or more does not fit
	// the header's u16, and bbolt then stores it in that first slot.
	hdr := make([]byte, pageHeaderSize+8)
	n, err := f.ReadAt(hdr, int64(p.Freelist)*ps)
	if n < pageHeaderSize {
		return damagedBy(fmt.Sprintf("read freelist page %d", p.Freelist), errOr(err, io.ErrUnexpectedEOF))
	}
	id := nativeEndian.Uint64(hdr[0:])
	flags := nativeEndian.Uint16(hdr[8:])
	count := uint64(nativeEndian.Uint16(hdr[10:]))
	overflow := uint64(nativeEndian.Uint32(hdr[12:]))
	if id != p.Freelist || flags != freelistFlag {
		return damaged("freelist page %d has id %d, flags %#x", p.Freelist, id, flags)
	}
	// The second test catches an overflow count that wraps the sum round.
	if p.Freelist+overflow >= p.Pgid || p.Freelist+overflow < p.Freelist {
		return damaged("freelist page %d with %d overflow pages passes the high-water mark %d", p.Freelist, overflow, p.Pgid)
	}
	room := (uint64(ps)*(overflow+1) - pageHeaderSize) / 8
	first := uint64(0)   // the index of the first id
	if count == 0xFFFF { // the real count is in the first element, which takes a slot itself
		if n < len(hdr) {
			return damagedBy(fmt.Sprintf("read freelist page %d", p.Freelist), errOr(err, io.ErrUnexpectedEOF))
		}
		if count = nativeEndian.Uint64(hdr[pageHeaderSize:]); count >= room {
			return damaged("freelist page %d claims %d ids, room for %d", p.Freelist, count, room-1)
		}
		first = 1
	} else if count > room {
		return damaged("freelist page %d claims %d ids, room for %d", p.Freelist, count, room)
	}
	// bbolt gives its freelist the pages the list takes, a page more at
	// most (it sizes them before the commit's own allocation takes ids
	// off the list). A span far larger is damage, and would cost what it
	// claims: a writer's bbolt frees each of its pages, one id at a time,
	// at the next commit.
	if need := (pageHeaderSize + (first+count)*8 + uint64(ps) - 1) / uint64(ps); overflow+1 > 2*need+1 {
		return damaged("freelist page %d spans %d pages; its %d ids take %d", p.Freelist, overflow+1, count, need)
	}
	if testSkipWalk {
		return nil
	}
	// The walk comes before the list's ids are judged: whether a listed
	// page is in use is known only once every reachable page is.
	w, err := walkTree(f, m, p.Freelist, overflow)
	if err != nil || !write {
		return err
	}
	return w.freelist(p.Freelist, first, count)
}

// freelist checks the ids on the freelist page at id, after the walk:
// every one a page under the high-water mark that no bucket reaches, each
// listed once. bbolt trusts the list and hands its pages to the next
// commit, so a page in use that is also on the list is overwritten by the
// next commit, which is acknowledged while the records it held are lost:
// single-byte flips there did exactly that (issue 15). Readers never read
// the list.
func (w *walker) freelist(id, first, count uint64) error {
	// Read a chunk at a time: count is bounded by the pages the header
	// claims (up to 2^32 of a sparse file), and a list that long is read
	// only as far as it holds pages the file has.
	const chunk = 8 << 10 // ids
	listed := map[uint64]bool{}
	buf := make([]byte, min(count, chunk)*8)
	for i := uint64(0); i < count; {
		b := buf[:min(count-i, chunk)*8]
		if _, err := w.readAt(b, id*w.ps+pageHeaderSize+(first+i)*8); err != nil {
			return damagedBy(fmt.Sprintf("read freelist page %d", id), err)
		}
		for ; len(b) > 0; b, i = b[8:], i+1 {
			free := nativeEndian.Uint64(b)
			switch {
			case free < 2 || free >= w.hwm:
				return damaged("freelist page %d lists page %d, outside the file's pages 2..%d", id, free, w.hwm-1)
			case w.inUse(free):
				return damaged("freelist page %d lists page %d, which is in use", id, free)
			case listed[free]:
				// bbolt would hand the page out twice, to two nodes of one
				// commit, and the second write would replace the first.
				return damaged("freelist page %d lists page %d twice", id, free)
			}
			listed[free] = true
		}
	}
	return nil
}

// testSkipWalk lets the damage tests hand bbolt pages that only the walk,
// or a writer's reading of its snapshot, would have refused, to prove the
// recover guard behind them.
var testSkipWalk bool

// errOr returns otherwise for a read that stopped at the end of the file
// (io.EOF, or no error beside a short count): what went wrong is that the
// file is shorter than its pages claim, which otherwise names.
func errOr(err, otherwise error) error {
	if err == nil || errors.Is(err, io.EOF) {
		return otherwise
	}
	return err
}
