package fsat

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// ResolvedPath is like filepath.EvalSymlinks of p made absolute, but for a
// path whose last parts need not exist yet (kept as written, cleaned), and
// without cleaning p first: "link/.." is the parent of the link's target,
// as the kernel takes it, not the link's own directory. A part that cannot
// be looked at for another reason than its absence or a file where a
// directory would be (EACCES, ENAMETOOLONG for a path whose links lead
// past PATH_MAX, EIO, ESTALE) is an error, and so is a relative p whose
// working directory is gone: where the path leads is then not known, and
// a caller that compares it refuses it (the kernel may still take such a
// path: a chain of links can lead where no one path of PATH_MAX spells).
// The error is the errno alone, without the path it was met on, which
// can be that long: the caller names p.
//
// It is the one function here that follows links, on purpose: it says
// where a configured path leads, to compare it with another (a job dir
// with the store's directory, a walk's root with "/"). Nothing is ever
// opened by the path it returns.
func ResolvedPath(p string) (string, error) {
	if !filepath.IsAbs(p) {
		wd, err := os.Getwd()
		if err != nil {
			return "", errnoOf(err)
		}
		p = wd + string(filepath.Separator) + p
	}
	head, tail := p, ""
	for {
		resolved, err := filepath.EvalSymlinks(head)
		if err == nil {
			return filepath.Join(resolved, tail), nil
		}
		head = strings.TrimRight(head, string(filepath.Separator))
		i := strings.LastIndexByte(head, filepath.Separator)
		switch {
		case !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, unix.ENOTDIR):
			var errno unix.Errno
			if !errors.As(err, &errno) {
				// EvalSymlinks' own count of links (more than 255: a
				// loop) carries no errno; the kernel, which follows
				// fewer, answers such a path with ELOOP.
				return "", unix.ELOOP
			}
			return "", errno
		case i < 0:
			return filepath.Clean(p), nil
		}
		head, tail = head[:i+1], filepath.Join(head[i+1:], tail)
	}
}

// errnoOf is err's errno, where err carries one, else err.
func errnoOf(err error) error {
	var errno unix.Errno
	if errors.As(err, &errno) {
		return errno
	}
	return err
}
