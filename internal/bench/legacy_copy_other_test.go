//go:build !linux

package bench

import (
	"golang.org/x/sys/unix"

	"sessdb/internal/fsat"
)

// copyRange copies size bytes from in to out through user space: there is
// no copy_file_range here, so the baseline's copy is not libuv's (macOS's
// libuv uses fcopyfile); the benchmarks' Linux figures are the reference.
func copyRange(in, out int, size int64) (int64, error) {
	buf := make([]byte, 64<<10)
	var n int64
	for n < size {
		m, err := fsat.IgnoringEINTR(func() (int, error) { return unix.Read(in, buf[:min(int64(len(buf)), size-n)]) })
		if err != nil || m == 0 {
			return n, err
		}
		for w := 0; w < m; {
			k, err := fsat.IgnoringEINTR(func() (int, error) { return unix.Write(out, buf[w:m]) })
			if err != nil {
				return n, err
			}
			w += k
		}
		n += int64(m)
	}
	return n, nil
}
