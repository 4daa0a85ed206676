// Package bench holds sessdb's benchmarks against the legacy store (issue
// 7) and the helpers they share: transcripts of a chosen size, allocated
// bytes, and a page-cache drop for the cold runs. The benchmarks are in
// the _test files; the baseline protocols are in internal/bench/legacy; the
// program that runs the set and writes the ratios table is
// internal/bench/report. docs/PERFORMANCE.md has the results.
//
// Nothing here runs in `go test ./...` beyond a few cheap checks of the
// helpers: every benchmark needs -bench, and the 10,000-key fixtures of the
// dump and migrate benchmarks are built on first use inside a benchmark.
//
// Every target is a ratio of two benchmarks measured in the same process
// run, never an absolute time: the machines are shared and noisy.
package bench

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Transcript returns a pi transcript of exactly size bytes: a v3 session
// header, then user messages of filler text, every line ending in a
// newline. A size too small for the header and one message is rounded up
// to that.
func Transcript(size int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"type":"session","version":3,"id":"0b9c3f0e-1111-4a2b-8c3d-123456789abc","timestamp":"2026-11-01T12:00:00.000Z","cwd":"/workspace"}` + "\n")
	const open = `{"type":"message","id":"%08x","parentId":null,"timestamp":"2026-11-01T12:00:00.000Z","message":{"role":"user","content":"`
	const close = `"}}` + "\n"
	const line = 4000 // filler per message, about a real message's size
	filler := strings.Repeat("lorem ipsum ", line/12+1)
	for i := 0; b.Len() < size; i++ {
		head := fmt.Sprintf(open, i)
		fill := size - b.Len() - len(head) - len(close)
		if fill > 2*line {
			fill = line // else the last message takes what is left
		}
		fill = max(fill, 1)
		b.WriteString(head)
		b.WriteString(strings.Repeat(filler, fill/len(filler)+1)[:fill])
		b.WriteString(close)
	}
	return b.Bytes()
}

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

// AllocatedDir is Allocated over every regular file directly in dir.
func AllocatedDir(dir string) (int64, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	var paths []string
	for _, e := range ents {
		if e.Type().IsRegular() {
			paths = append(paths, filepath.Join(dir, e.Name()))
		}
	}
	return Allocated(paths...)
}

// DropCache evicts the page-cache pages of every file under the given
// roots with posix_fadvise(POSIX_FADV_DONTNEED). The files must be clean
// (written back): the kernel keeps dirty pages and pages under writeback,
// so a caller that just wrote them calls SyncFS first.
//
// Why not drop_caches: it is machine-wide, on a machine shared with other
// engineers' runs. The cost of this choice: directory entries and inodes
// stay cached, so a cold run here is "data cold, metadata warm".
func DropCache(roots ...string) (files int, err error) {
	for _, root := range roots {
		err = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return err
			}
			fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
			if err != nil {
				return &os.PathError{Op: "open", Path: p, Err: err}
			}
			defer unix.Close(fd)
			if err := unix.Fadvise(fd, 0, 0, unix.FADV_DONTNEED); err != nil {
				return &os.PathError{Op: "fadvise", Path: p, Err: err}
			}
			files++
			return nil
		})
		if err != nil {
			return files, err
		}
	}
	return files, nil
}

// SyncFS writes back every dirty page of the filesystem holding path, so
// that DropCache can evict them.
func SyncFS(path string) error {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	if err := unix.Syncfs(fd); err != nil {
		return &os.PathError{Op: "syncfs", Path: path, Err: err}
	}
	return nil
}

// Resident reports how many of the pages of the file at path are in the
// page cache (mincore over a read-only mapping), and how many it has.
func Resident(path string) (resident, pages int, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return 0, 0, err
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return 0, 0, &os.PathError{Op: "mmap", Path: path, Err: err}
	}
	defer unix.Munmap(m)
	ps := os.Getpagesize()
	vec := make([]byte, (len(m)+ps-1)/ps)
	// x/sys/unix has no wrapper for mincore.
	_, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0])))
	if errno != 0 {
		return 0, 0, &os.PathError{Op: "mincore", Path: path, Err: errno}
	}
	for _, v := range vec {
		resident += int(v & 1)
	}
	return resident, len(vec), nil
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

// fsTopDirFL is FS_TOPDIR_FL from linux/fs.h; x/sys/unix does not export
// it.
const fsTopDirFL = 0x00020000

// SetTopDir marks dir as the top of a directory hierarchy (chattr +T,
// FS_TOPDIR_FL), so that ext4 places each of its new subdirectories in a
// block group of its own choosing rather than beside dir. It reports
// whether the flag was set; a filesystem that does not know it is not an
// error the benchmarks care about.
func SetTopDir(dir string) bool {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	flags, err := unix.IoctlGetUint32(fd, unix.FS_IOC_GETFLAGS)
	if err != nil {
		return false
	}
	return unix.IoctlSetPointerInt(fd, unix.FS_IOC_SETFLAGS, int(flags|fsTopDirFL)) == nil
}
