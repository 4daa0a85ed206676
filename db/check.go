package db

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"syscall"

	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"
)

// Check runs bbolt's full consistency check (no page both free and in use,
// none unreachable, every branch and leaf well formed and in order) in a
// read transaction and returns what it reports, at most max problems and
// a count of the rest; nil means the file is consistent. An error means
// the check could not run, as for a file whose pages span more than 1 GiB
// (maxCheckedBytes), which it does not copy.
//
// The check reads a private copy of the file's pages, in memory, taken
// under the handle's lock and pre-checked: bbolt walks the file in a
// goroutine of its own, beyond the guard that turns faults into ErrDamaged
// elsewhere in this package, so a mapping of meta.db itself would let a
// process that cuts the file short kill this one with SIGBUS.
//
// Caveat: damage the pre-check does not catch can still make bbolt panic in
// that goroutine and kill the process. Call it only in a process whose
// death the caller survives (sessdb check runs it in a child process).
func (d *DB) Check(max int) (problems []string, err error) {
	d.mu.Lock() // no transaction runs while the pages are copied
	pages, meta, err := d.pages()
	d.mu.Unlock()
	if err != nil {
		return nil, pathErr("check", d.name, err)
	}
	f, err := memFile(d.name, pages)
	if err != nil {
		return nil, pathErr("check", d.name, err)
	}
	if err := coverInvalidMeta(f, pages, meta); err != nil {
		f.Close()
		return nil, pathErr("check", d.name, err)
	}
	// Read-only: bbolt writes nothing into the copy, and its flock on the
	// copy (a file nobody else knows) is had at once.
	bopts := &bolt.Options{
		ReadOnly:     true,
		NoStatistics: true,
		OpenFile:     func(string, int, os.FileMode) (*os.File, error) { return f, nil },
	}
	var bdb *bolt.DB
	err = guard(func() (err error) {
		if bdb, err = bolt.Open(d.name, 0o400, bopts); err != nil {
			bdb = nil
			var errno syscall.Errno
			if errors.As(err, &errno) {
				// The process's trouble, as at openDB: no address space
				// left to map the copy (ENOMEM), not the file's content.
				return err
			}
			return damagedBy("bbolt", err)
		}
		// Not deferred: after a panic bbolt's locks may be held.
		err = bdb.View(func(tx *bolt.Tx) error {
			// bbolt chose its meta page on its own: another txid would
			// mean it checks another commit than the one pre-checked.
			if uint64(tx.ID()) != meta.Pages[meta.Active].Txid {
				return fmt.Errorf("the copy reads txid %d, the file %d", tx.ID(), meta.Pages[meta.Active].Txid)
			}
			// The channel is drained even past max: bbolt's checking
			// goroutine sends on an unbuffered channel, and stopping
			// early would leave it blocked for good.
			n := 0
			for err := range tx.Check() {
				if n++; n <= max {
					problems = append(problems, err.Error())
				}
			}
			if n > max {
				problems = append(problems, fmt.Sprintf("and %d more", n-max))
			}
			return nil
		})
		if cerr := bdb.Close(); err == nil {
			err = cerr
		}
		return err
	})
	var pe *panicError
	if errors.As(err, &pe) && bdb != nil {
		unmapPoisoned(bdb)
	}
	f.Close() // bbolt closed it, unless it panicked
	if err != nil {
		return nil, pathErr("check", d.name, err)
	}
	return problems, nil
}

// coverInvalidMeta writes, over the copy's invalid meta page (if one is),
// the page bbolt uses, under the invalid one's page id: what the next
// commit writes there; and gives a valid meta page whose header's id or
// flags are not a meta page's (bytes its checksum does not cover, which
// bbolt neither reads at its open nor keeps: each commit writes the whole
// header of the page it writes) the header bbolt writes. bbolt's check
// reads both meta pages' headers before anything else, and either fault
// panicked it there: a check that reported an invalid meta page
// InspectMeta already names (meta-page-invalid), or a header no open
// reads, as an inconsistency (meta-check-failed, a file check --repair
// moved aside), and looked at nothing of the commit in use. Covered, the
// check walks that commit, and reports what is wrong with it only.
func coverInvalidMeta(f *os.File, pages []byte, m MetaPages) error {
	if m.Active < 0 {
		return nil
	}
	for i, mp := range m.Pages {
		src := mp.Offset
		if !mp.Valid() {
			src = m.Pages[m.Active].Offset
		}
		if src+int64(m.PageSize) > int64(len(pages)) || mp.Offset+int64(m.PageSize) > int64(len(pages)) {
			continue
		}
		p := make([]byte, m.PageSize)
		copy(p, pages[src:])
		nativeEndian.PutUint64(p, uint64(i))        // the header's id
		nativeEndian.PutUint16(p[8:], metaPageFlag) // and its flags
		if bytes.Equal(p, pages[mp.Offset:mp.Offset+int64(m.PageSize)]) {
			continue
		}
		if _, err := f.WriteAt(p, mp.Offset); err != nil {
			return fmt.Errorf("check copy: %w", err)
		}
	}
	return nil
}

// maxCheckedBytes bounds the pages Check copies, twice (read, then into
// the in-memory file bbolt maps). A meta.db sessdb writes stays far below
// it; a high-water mark raised over a sparse tail would otherwise cost the
// check that much memory, and reading that much of nothing.
const maxCheckedBytes = 1 << 30

// pages returns the file's pages up to the high-water mark of its active
// meta page, as they are now, pre-checked. d.mu must be held.
func (d *DB) pages() ([]byte, MetaPages, error) {
	switch {
	case d.closed || d.fileClosed:
		return nil, MetaPages{}, ErrClosed
	case d.poison.Load() != nil:
		return nil, MetaPages{}, *d.poison.Load()
	case d.snap != nil:
		return d.snap.pages, d.meta, nil
	}
	// A writer's commits since the open moved the meta pages on.
	var st unix.Stat_t
	if err := unix.Fstat(int(d.file.Fd()), &st); err != nil {
		return nil, MetaPages{}, err
	}
	if testHookReading != nil {
		testHookReading()
	}
	m, err := InspectMeta(d.file, st.Size)
	if err != nil {
		return nil, m, err
	}
	if hw := m.HighWater(); hw > maxCheckedBytes {
		return nil, m, fmt.Errorf("its pages span %d bytes, more than the check copies into memory (%d)", hw, int64(maxCheckedBytes))
	}
	pages, err := readPrefix(d.file, m.HighWater())
	if err != nil {
		return nil, m, err
	}
	if err := precheckTree(memPages(pages), m, false); err != nil {
		return nil, m, err
	}
	if err := unchangedSince(d.file, stampOf(&st)); err != nil {
		return nil, m, err
	}
	return pages, m, nil
}
