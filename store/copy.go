package store

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"runtime/debug"

	"golang.org/x/sys/unix"

	"sessdb/gates"
	"sessdb/internal/fsat"
)

// castagnoli is the CRC32C table: the checksum every record of a
// transcript stores (meta.db's, a fleet's). Go's hash/crc32 computes this
// polynomial with the CPU's CRC32 instructions on amd64 (SSE4.2) and arm64.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// resetStaged empties the staged file for another copy or a cold start.
func resetStaged(f *os.File) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err := f.Seek(0, io.SeekStart)
	return err
}

// coldAfterCopy empties the staged file a copy filled, and cold-starts.
func coldAfterCopy(staged *os.File, r gates.Reason, cold func(gates.Reason) error) error {
	if err := resetStaged(staged); err != nil {
		return err
	}
	return cold(r)
}

// copyCounted copies at most limit bytes from src (from offset 0) to dst,
// and returns how many it copied and their CRC32C. A transcript of
// mapThreshold bytes or more is read through a mapping (copyMapped).
func copyCounted(dst io.Writer, src *os.File, limit int64) (int64, uint32, error) {
	if st, err := fsat.Fstat(src); err == nil && st.Size >= mapThreshold {
		if n, sum, err, mapped := copyMapped(dst, src, min(st.Size, limit)); mapped {
			return n, sum, err
		}
	}
	h := crc32.New(castagnoli)
	n, err := io.Copy(io.MultiWriter(dst, h), sourceReader{io.NewSectionReader(src, 0, limit)})
	if err != nil {
		return n, 0, fmt.Errorf("copy %s: %w", src.Name(), err)
	}
	return n, h.Sum32(), nil
}

// sourceError is a copy's failure to read its source, as opposed to
// writing the staged file: the key view judges it (KeyView.Lost).
type sourceError struct{ err error }

func (e *sourceError) Error() string { return e.err.Error() }

// Unwrap keeps the cause reachable by errors.Is when a read error is
// returned as a fault rather than judged.
func (e *sourceError) Unwrap() error { return e.err }

// sourceReader marks its reader's errors as the source's.
type sourceReader struct{ r io.Reader }

// Read passes io.EOF through unwrapped: io.Copy ends on it by identity.
func (s sourceReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil && err != io.EOF {
		err = &sourceError{err}
	}
	return n, err
}

// mapThreshold is the transcript size from which copyCounted maps the
// file: the checksum and the write then read the page cache in place,
// where reading the file first copies every byte into a buffer
// (internal/bench BenchmarkCopyCRC: 8 MiB in 2.1 ms mapped, 2.4 ms
// through a buffer; at 64 KiB the mapping's setup costs more than the
// copy it saves).
const mapThreshold = 1 << 20

// mapChunk is how much of the mapping is checksummed and then written at a
// time: small enough that the write reads what the checksum just brought
// into the CPU's cache.
const mapChunk = 256 << 10

// copyMapped copies the first size bytes of src to dst through a read-only
// mapping. mapped is false when the file could not be mapped (the caller
// then reads it). The store only ever replaces a transcript by rename, but
// a file cut short out of band under the mapping would make reading past
// its new end fault (SIGBUS): that fault is recovered, and the copy ends
// short, as a read would have, for the identity check to refuse.
func copyMapped(dst io.Writer, src *os.File, size int64) (n int64, sum uint32, err error, mapped bool) {
	if size <= 0 || size != int64(int(size)) {
		return 0, 0, nil, false
	}
	m, merr := unix.Mmap(int(src.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if merr != nil {
		return 0, 0, nil, false
	}
	defer unix.Munmap(m)
	unix.Madvise(m, unix.MADV_SEQUENTIAL)
	prev := debug.SetPanicOnFault(true)
	defer func() {
		debug.SetPanicOnFault(prev)
		if r := recover(); r != nil {
			if _, isFault := r.(interface{ Addr() uintptr }); !isFault {
				panic(r)
			}
			err, mapped = nil, true // cut short: n bytes were copied
		}
	}()
	for off := 0; off < len(m); off += mapChunk {
		b := m[off:min(off+mapChunk, len(m))]
		next := crc32.Update(sum, castagnoli, b)
		w, werr := dst.Write(b)
		n += int64(w)
		if errors.Is(werr, unix.EFAULT) { // cut short between the checksum and the write
			return n, sum, nil, true
		}
		if werr != nil {
			return n, sum, fmt.Errorf("copy %s: %w", src.Name(), werr), true
		}
		sum = next
	}
	return n, sum, nil, true
}
