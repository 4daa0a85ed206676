package bench

import (
	"golang.org/x/sys/unix"

	"sessdb/internal/fsat"
)

// copyRange copies size bytes from in to out with copy_file_range, as
// libuv does on Linux, and returns how many it copied.
func copyRange(in, out int, size int64) (int64, error) {
	var n int64
	for n < size {
		m, err := fsat.IgnoringEINTR(func() (int, error) {
			return unix.CopyFileRange(in, nil, out, nil, int(size-n), 0)
		})
		if err != nil || m == 0 {
			return n, err
		}
		n += int64(m)
	}
	return n, nil
}
