package bench

import (
	"bytes"
	"os"

	"golang.org/x/sys/unix"
)

// Allocated is the sum of st_blocks*512 over paths (lstat, no link
// followed): what the files take on disk, holes excluded and partial
// blocks rounded up, as du reports it.
func Allocated(paths ...string) (int64, error) {
	var sum int64
	for _, p := range paths {
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return 0, &os.PathError{Op: "lstat", Path: p, Err: err}
		}
		sum += st.Blocks * 512
	}
	return sum, nil
}

// CopySparse copies the file src to dst, leaving a hole wherever src has a
// 4 KiB block of zeros: bbolt grows meta.db by truncation and writes only
// the pages it uses, so a fixture copied densely would read and allocate
// blocks the real file does not have.
func CopySparse(src, dst string, perm os.FileMode) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	const block = 4096
	zero := make([]byte, block)
	for off := 0; off < len(data); off += block {
		chunk := data[off:min(off+block, len(data))]
		if bytes.Equal(chunk, zero[:len(chunk)]) {
			continue
		}
		if _, err := f.WriteAt(chunk, int64(off)); err != nil {
			f.Close()
			return err
		}
	}
	if err := f.Truncate(int64(len(data))); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
