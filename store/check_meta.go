package store

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"sessdb/db"
	"sessdb/internal/fsat"
)

// MetaPagesReport shows both bbolt meta pages of a meta.db and which one
// bbolt would use. bbolt takes the valid page with the higher txid and
// silently falls back to the other one when that page is damaged, losing
// the last commit; this report is how an operator sees that happen.
type MetaPagesReport struct {
	Bytes     int64            `json:"bytes"`      // the file size
	PageSize  int              `json:"page_size"`  // 0 when no page size could be found
	HighWater int64            `json:"high_water"` // bytes the active page says the file holds; above Bytes is a truncation
	Active    int              `json:"active"`     // index of the page bbolt uses; -1 when neither is valid
	Fallback  bool             `json:"fallback"`   // a page is invalid: bbolt has one commit left, or lost the newest
	Error     string           `json:"error"`      // why the pages could not be read
	Pages     []MetaPageReport `json:"pages"`      // both pages, in file order; none when unreadable
}

// MetaPageReport is one meta page.
type MetaPageReport struct {
	Txid  uint64 `json:"txid"`  // as written; meaningless when the page is not valid
	Valid bool   `json:"valid"` // bbolt would use it: magic, version and checksum hold
	Error string `json:"error"` // why bbolt would not use the page
	Pages uint64 `json:"pages"` // the page's high-water mark, in pages
}

// readMetaPages reads both meta pages of kd's meta.db without mapping it
// and without following a link. It is called with the key's shared lock
// held when the db opened, and without it when the db is damaged (the
// report is then a snapshot of a file nobody can be writing: a writer's
// open fails on the same damage).
func readMetaPages(kd *os.File) *MetaPagesReport {
	r := &MetaPagesReport{Active: -1}
	f, err := fsat.OpenAt(kd, db.FileName, unix.O_RDONLY, 0)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	defer f.Close()
	st, err := fsat.Fstat(f)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	if !fsat.IsRegular(&st) {
		r.Error = fmt.Sprintf("not a regular file (mode %#o)", st.Mode)
		return r
	}
	m, err := db.InspectMeta(f, st.Size)
	return metaPagesReport(m, err)
}

// keyMetaPages is readMetaPages for a key whose meta.db is open: the pages
// its open judged it by, under the same lock, without reading them again.
func keyMetaPages(k *keyDir) *MetaPagesReport {
	if k.meta != nil {
		return metaPagesReport(k.meta.MetaPages(), nil)
	}
	return readMetaPages(k.dir)
}

// metaPagesReport turns db's reading of the meta pages into the report.
// With no page size found nothing of the pages can be read, and the
// report says only the file's size and the error; so with a read that
// failed (an error that is not damage): it says nothing of either page,
// and the page not read would show as valid, and one of them invalid as
// a fallback.
func metaPagesReport(m db.MetaPages, err error) *MetaPagesReport {
	r := &MetaPagesReport{Active: -1}
	r.Bytes, r.PageSize, r.Active, r.HighWater = m.Size, m.PageSize, m.Active, m.HighWater()
	if err != nil {
		r.Error = err.Error()
	}
	if m.PageSize == 0 || err != nil && !errors.Is(err, db.ErrDamaged) {
		return r
	}
	for _, p := range m.Pages {
		pr := MetaPageReport{Txid: p.Txid, Valid: p.Valid(), Pages: p.Pgid}
		if p.Err != nil {
			pr.Error = p.Err.Error()
		}
		r.Pages = append(r.Pages, pr)
	}
	r.Fallback = r.Pages[0].Valid != r.Pages[1].Valid
	return r
}

// fallbackDetail says what one invalid meta page means. bbolt writes the
// meta of txid t to page t%2, so the invalid page is the one the next
// commit after the active one went to (or would go to): if its txid still
// reads higher, that commit is lost; if it does not (a zeroed page reads as
// txid 0), there is no telling whether the newest commit or the older
// spare was hit.
func (m *MetaPagesReport) fallbackDetail() string {
	if !m.Fallback || m.Active < 0 {
		return ""
	}
	act, bad := m.Pages[m.Active], m.Pages[1-m.Active]
	if bad.Txid > act.Txid {
		return fmt.Sprintf("meta page %d (txid %d) is invalid (%s): bbolt has fallen back to meta page %d, txid %d, and the last commit is lost",
			1-m.Active, bad.Txid, bad.Error, m.Active, act.Txid)
	}
	return fmt.Sprintf("meta page %d is invalid (%s): bbolt uses meta page %d (txid %d); either the newest commit was lost or the spare page was damaged, and no fallback is left",
		1-m.Active, bad.Error, m.Active, act.Txid)
}
