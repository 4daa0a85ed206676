package shared

import "errors"

// These errors are returned wrapped in an *os.PathError or *os.LinkError
// naming the path; test for them with errors.Is. A name that is gone is
// fs.ErrNotExist (a generation reaped under a slow reader).
var (
	// ErrInvalidKey is returned when a key is not 32 lowercase hex
	// characters; nothing is touched for it.
	ErrInvalidKey = errors.New("invalid key")

	// ErrInvalidName is returned when a transcript name is not one Write
	// makes ("<key>/<gen>-<random>.jsonl", or a temp name for Remove); a
	// name read from etcd is foreign input and is never used as a path
	// before it passes.
	ErrInvalidName = errors.New("invalid transcript name")

	// ErrNotRegular is returned when the name, or the key directory above
	// it, is a link, a FIFO, a device or anything but a regular file
	// (directory); it is never followed or opened for reading. At a key
	// directory's name its text says a directory is wanted there.
	ErrNotRegular = errors.New("not a regular file")

	// ErrExists is returned when the name Write chose, or WriteAgain was
	// given, is taken. Write's names are random, so this means something
	// other than Write made it; it is never overwritten.
	ErrExists = errors.New("name already taken")
)

// ErrDirUnavailable is returned, wrapped with the stat that failed (the
// dir named in it), when the transcripts dir itself is gone, not a
// directory, or stale (ESTALE: the export went away): the storage, not
// any key's file, is missing. See DirErr.
var ErrDirUnavailable = errors.New("the transcripts dir is unavailable")

// errKeyNameNotDir is ErrNotRegular met at a key directory's name: its
// text names the directory wanted there, not a file.
var errKeyNameNotDir error = keyNameNotDir{}

type keyNameNotDir struct{}

func (keyNameNotDir) Error() string {
	return "not a directory: a link or another file has the key's name (never followed)"
}

func (keyNameNotDir) Is(target error) bool { return target == ErrNotRegular }
