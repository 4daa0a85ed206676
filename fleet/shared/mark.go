package shared

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	"sessdb/fleet/internal/sharedfs"
	"sessdb/internal/faults"
	"sessdb/internal/fsat"
)

// MarkName is the file in a transcripts dir that ties it to one fleet:
// check and reap judge every file in the dir by their own fleet's
// records, so a second fleet's files there would be swept as orphans.
// It is written once, by the first writer of the fleet (see WriteMark),
// and never changed by sessdb.
const MarkName = ".sessdb-fleet"

// markTempPrefix begins the temp name a mark is written under.
const markTempPrefix = MarkName + ".tmp-"

// markMax bounds what ReadMark reads: a mark is its prefix and under 100
// bytes more (markPrefixMax bounds the prefix, quoted).
const markMax = 64 << 10

// markPrefixMax bounds a mark's prefix, quoted: longer than any
// deployment's, and well under markMax.
const markPrefixMax = 32 << 10

// markHead is a mark's first line: what the file is, and its format's
// version.
const markHead = "sessdb fleet mark 1"

// Mark is what a transcripts dir's mark says: the ID of the fleet whose
// transcripts it holds (kept in etcd under the fleet's prefix), and that
// prefix as it was when the mark was written, for an operator to read.
type Mark struct {
	ID     string
	Prefix string
}

// ErrBadMark is returned, wrapped in an *os.PathError naming the mark,
// when the file at MarkName is not a mark sessdb wrote: a link, a
// directory or anything but a regular file (never followed or opened), or
// bytes that do not parse. sessdb never replaces it: an operator decides
// whose dir it is.
var ErrBadMark = errors.New("not a fleet mark sessdb wrote")

// ReadMark reads dir's mark; found is false where dir has none.
func ReadMark(dir string) (m Mark, found bool, err error) {
	root, err := fsat.OpenDir(dir)
	if err != nil {
		return m, false, err
	}
	defer root.Close()
	return readMark(root)
}

func readMark(root *os.File) (Mark, bool, error) {
	var b []byte
	err := faults.At(faults.SharedMarkRead)
	if err != nil {
		err = &os.PathError{Op: "read", Path: fsat.Join(root, MarkName), Err: err}
	} else {
		b, err = fsat.ReadSmallFile(root, MarkName, markMax)
	}
	switch {
	case fsat.IsNotExist(err):
		return Mark{}, false, nil
	case errors.Is(err, fsat.ErrNotRegular), errors.Is(err, fsat.ErrTooLarge):
	case err != nil:
		return Mark{}, true, err
	default:
		var m Mark
		if m, err = parseMark(b); err == nil {
			return m, true, nil
		}
	}
	return Mark{}, true, &os.PathError{Op: "read", Path: fsat.Join(root, MarkName), Err: fmt.Errorf("%w: %w", ErrBadMark, err)}
}

// WriteMark gives dir the mark m unless it has one, and returns the mark
// dir holds after: m, or the one another writer put there first (two
// writers of one fleet write the same; of two fleets, the first wins and
// the second reads the first's), durable either way (see SyncMark). The
// mark is written to a temp name, fsynced and given its name with a
// rename that never replaces one; then dir is fsynced. A crash leaves no
// mark, or a whole one, and at most a temp ("<MarkName>.tmp-<random>",
// which check reports as an orphan and --repair removes).
func WriteMark(dir string, m Mark) (Mark, error) {
	if !validMarkID(m.ID) || !validMarkPrefix(m.Prefix) {
		return Mark{}, fmt.Errorf("write mark in %s: id %q, prefix of %d bytes: want 32 lowercase hex characters and a UTF-8 prefix of at most %d bytes quoted", dir, m.ID, len(m.Prefix), markPrefixMax)
	}
	root, err := fsat.OpenDir(dir)
	if err != nil {
		return Mark{}, err
	}
	defer root.Close()
	disk := sharedfs.FS()
	if had, found, err := readMark(root); found || err != nil {
		if err == nil {
			err = disk.SyncDir(root) // another writer's: see SyncMark
		}
		return had, err
	}
	rnd, err := random()
	if err != nil {
		return Mark{}, err
	}
	tmp := markTempPrefix + rnd
	f, err := disk.CreateTemp(root, tmp)
	if err != nil {
		return Mark{}, err
	}
	st, err := fsat.Fstat(f)
	if err == nil {
		_, err = f.Write(formatMark(m))
	}
	if err == nil {
		err = disk.SyncFile(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		if err = noReplace(disk, root, tmp, MarkName); err != nil && renamed(disk, root, tmp, MarkName, &st) {
			err = nil
		}
	}
	if err != nil {
		disk.Unlink(root, tmp)
		if errors.Is(err, ErrExists) {
			// Another writer's mark took the name first: it is the
			// dir's, whosever it is (made durable: see SyncMark).
			had, found, err := readMark(root)
			if err == nil && found {
				err = disk.SyncDir(root)
			}
			return had, err
		}
		return Mark{}, err
	}
	// Until the dir is fsynced a power cut can take the mark away; the
	// next writer then writes it again.
	if err := disk.SyncDir(root); err != nil {
		return Mark{}, err
	}
	return m, nil
}

// SyncMark makes the mark ReadMark found in dir durable, as WriteMark
// makes the one it wrote or found: another writer renames its mark into
// place and fsyncs dir after, and a writer that takes the mark for its
// fleet's before that fsync must not write what a power cut keeps while
// the mark is taken back (the dir then comes back unmarked under
// acknowledged transcripts, and another fleet's first writer marks it its
// own and sweeps them).
func SyncMark(dir string) error {
	root, err := fsat.OpenDir(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	return sharedfs.FS().SyncDir(root)
}

// formatMark is a mark's bytes: its head, then one field a line.
func formatMark(m Mark) []byte {
	return fmt.Appendf(nil, "%s\nid %s\nprefix %s\n", markHead, m.ID, strconv.Quote(m.Prefix))
}

// parseMark parses what formatMark makes, and nothing else.
func parseMark(b []byte) (Mark, error) {
	if !utf8.Valid(b) || !bytes.HasSuffix(b, []byte("\n")) {
		return Mark{}, errors.New("not lines of UTF-8 text")
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 3 || lines[0] != markHead {
		return Mark{}, fmt.Errorf("want 3 lines, the first %q", markHead)
	}
	id, ok := strings.CutPrefix(lines[1], "id ")
	if !ok || !validMarkID(id) {
		return Mark{}, fmt.Errorf("line 2: want %q and 32 lowercase hex characters", "id ")
	}
	q, ok := strings.CutPrefix(lines[2], "prefix ")
	prefix, err := strconv.Unquote(q)
	if !ok || err != nil || strconv.Quote(prefix) != q || !validMarkPrefix(prefix) {
		return Mark{}, fmt.Errorf("line 3: want %q and a quoted etcd prefix", "prefix ")
	}
	return Mark{ID: id, Prefix: prefix}, nil
}

func validMarkID(id string) bool { return len(id) == 32 && lowerHex(id) }

func validMarkPrefix(p string) bool {
	return p != "" && utf8.ValidString(p) && len(strconv.Quote(p)) <= markPrefixMax
}

// IsMarkTemp reports whether name, an entry of a transcripts dir, is the
// temp WriteMark writes a mark under.
func IsMarkTemp(name string) bool {
	r, ok := strings.CutPrefix(name, markTempPrefix)
	return ok && len(r) == hexLen && lowerHex(r)
}

// RemoveMarkTemp removes the mark's temp name from dir (one a crash left:
// check --repair's), never a link's target. The dir is not fsynced: a
// removal a crash undoes leaves the temp, which is removed again.
func RemoveMarkTemp(dir, name string) error {
	if !IsMarkTemp(name) {
		return &os.PathError{Op: "remove", Path: dir + "/" + name, Err: ErrInvalidName}
	}
	root, err := fsat.OpenDir(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	return sharedfs.FS().Unlink(root, name)
}
