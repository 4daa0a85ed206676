// Package powercut is a test helper: a durability journal that implements
// durable.FS and can take back, after the fact, everything a power failure
// could still lose. Every call goes to disk as usual; the journal records
// what is not yet durable:
//
//   - file data written since the file's last fsync (a file created through
//     the journal keeps only what it had at its last fsync, nothing if it
//     was never fsynced);
//   - an mtime set since the file's last fsync (it goes back);
//   - mkdirs, creates, links, renames and removals in a directory since
//     that directory's last fsync: a create or a link vanishes, a
//     directory made vanishes with everything in it, a rename goes back
//     (and what it replaced comes back), a removed entry reappears, so
//     the journal keeps
//     the bytes (a link's target, a FIFO's or an empty directory's mode) of
//     everything it removes or renames over.
//
// A SIGKILL leaves the page cache intact, so only a journal like this one
// catches a missing fsync. Writes that do not pass through it (bbolt's,
// package db's creation of meta.db) are durable by their own protocols and
// are taken as they are at the instant of the cut.
//
// Which of a directory's un-fsynced operations a power cut loses is ordered
// by nothing but an fsync, so Images offers several outcomes (Modes); Cut
// takes the plainest one in place. Only tests import this package.
package powercut

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/internal/durable"
	"sessdb/internal/fsat"
)

// Journal is a durable.FS that records what a power cut would take back.
// It is safe for concurrent use; Images and Cut must be called while no
// write is in flight.
type Journal struct {
	mu     sync.Mutex
	synced map[string]int64         // files created here: path -> size at the last fsync; -1 never
	mtimes map[string]unix.Timespec // path -> mtime before a SetMtime not yet fsynced
	ops    []dirOp                  // not yet durable, oldest first
}

var _ durable.FS = (*Journal)(nil)

type opKind int

const (
	opCreate opKind = iota
	opRename
	opUnlink
	opMkdir
	opLink
)

// String names the operation in a Lost entry.
func (k opKind) String() string { return [...]string{"create", "rename", "unlink", "mkdir", "link"}[k] }

// dirOp is a directory operation a power cut may undo.
type dirOp struct {
	kind opKind
	dir  string // the directory whose fsync makes it durable
	path string // create, unlink, mkdir: the name; rename, link: the destination
	from string // rename: the source
	prev *kept  // rename: what it replaced (nil: nothing); unlink: what it removed
}

// kept is an entry the journal can put back: its type and permissions,
// the bytes of a regular file or a link's target, and its mtime.
type kept struct {
	mode  uint32
	data  []byte
	mtime unix.Timespec
}

// New returns an empty journal: nothing is owed to a power cut yet.
func New() *Journal {
	return &Journal{synced: map[string]int64{}, mtimes: map[string]unix.Timespec{}}
}

// capture keeps what is at path; nil when nothing is.
func capture(path string) (*kept, error) {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		if err == unix.ENOENT {
			return nil, nil
		}
		return nil, &os.PathError{Op: "lstat", Path: path, Err: err}
	}
	k := &kept{mode: uint32(st.Mode), mtime: st.Mtim}
	var err error
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		k.data, err = os.ReadFile(path)
	case unix.S_IFLNK:
		var to string
		to, err = os.Readlink(path)
		k.data = []byte(to)
	case unix.S_IFIFO, unix.S_IFDIR: // only an empty directory is ever removed
	default:
		err = fmt.Errorf("%s: the power-cut journal cannot keep a %s", path, fsat.Kind(&st))
	}
	if err != nil {
		return nil, err
	}
	return k, nil
}

// restore puts k back at path.
func (k *kept) restore(path string) error {
	perm := k.mode & 0o7777
	var err error
	switch k.mode & unix.S_IFMT {
	case unix.S_IFREG:
		if err = os.WriteFile(path, k.data, 0o600); err == nil {
			err = os.Chmod(path, os.FileMode(perm))
		}
	case unix.S_IFLNK:
		err = os.Symlink(string(k.data), path)
	case unix.S_IFIFO:
		err = unix.Mkfifo(path, perm)
	case unix.S_IFDIR:
		return os.Mkdir(path, os.FileMode(perm))
	}
	if err != nil {
		return err
	}
	return setMtime(path, k.mtime)
}

// setMtime sets path's mtime, the link itself if it is one, keeping its
// atime (macOS has no UTIME_OMIT in x/sys/unix).
func setMtime(path string, mtime unix.Timespec) error {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return err
	}
	return unix.UtimesNanoAt(unix.AT_FDCWD, path, []unix.Timespec{st.Atim, mtime}, unix.AT_SYMLINK_NOFOLLOW)
}

// Mkdir implements durable.FS.
func (j *Journal) Mkdir(dir *os.File, name string, perm uint32) (bool, error) {
	made, err := durable.Disk{}.Mkdir(dir, name, perm)
	if made {
		j.mu.Lock()
		j.ops = append(j.ops, dirOp{kind: opMkdir, dir: dir.Name(), path: fsat.Join(dir, name)})
		j.mu.Unlock()
	}
	return made, err
}

// CreateTemp implements durable.FS.
func (j *Journal) CreateTemp(dir *os.File, name string) (*os.File, error) {
	f, err := durable.Disk{}.CreateTemp(dir, name)
	if err == nil {
		j.mu.Lock()
		j.synced[f.Name()] = -1
		j.ops = append(j.ops, dirOp{kind: opCreate, dir: dir.Name(), path: f.Name()})
		j.mu.Unlock()
	}
	return f, err
}

// SyncFile implements durable.FS.
func (j *Journal) SyncFile(f *os.File) error {
	if err := (durable.Disk{}).SyncFile(f); err != nil {
		return err
	}
	st, err := fsat.Fstat(f)
	if err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	// Only files created through the journal have data it can take back;
	// another file's writes did not pass through it (see the package doc).
	if _, ok := j.synced[f.Name()]; ok {
		j.synced[f.Name()] = st.Size
	}
	delete(j.mtimes, f.Name())
	return nil
}

// SetMtime implements durable.FS.
func (j *Journal) SetMtime(dir *os.File, name string, f *os.File, at time.Time) error {
	st, err := fsat.Fstat(f)
	if err != nil {
		return err
	}
	if err := (durable.Disk{}).SetMtime(dir, name, f, at); err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if _, ok := j.mtimes[f.Name()]; !ok {
		j.mtimes[f.Name()] = st.Mtim
	}
	return nil
}

// Rename implements durable.FS.
func (j *Journal) Rename(dir *os.File, from, to string) error {
	fromPath, toPath := fsat.Join(dir, from), fsat.Join(dir, to)
	// What the rename replaces must be kept before it goes: undoing the
	// rename puts it back, as a power cut before the directory fsync does.
	prev, err := capture(toPath)
	if err != nil {
		return err
	}
	if err := (durable.Disk{}).Rename(dir, from, to); err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if prev != nil {
		j.trim(toPath, prev)
	}
	return j.renamed(dir, fromPath, toPath, prev)
}

// RenameNoReplace implements durable.FS. It is journalled as a rename
// that replaced nothing; where the system has no atomic no-replace rename
// (fsat's link-then-unlink fallback) a cut could also leave both names,
// which the journal does not image.
func (j *Journal) RenameNoReplace(dir *os.File, from, to string) error {
	if err := (durable.Disk{}).RenameNoReplace(dir, from, to); err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.renamed(dir, fsat.Join(dir, from), fsat.Join(dir, to), nil)
}

// RenameNoReplaceAtomic implements durable.FS: a rename that replaced
// nothing, as RenameNoReplace's.
func (j *Journal) RenameNoReplaceAtomic(dir *os.File, from, to string) error {
	if err := (durable.Disk{}).RenameNoReplaceAtomic(dir, from, to); err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.renamed(dir, fsat.Join(dir, from), fsat.Join(dir, to), nil)
}

// Link implements durable.FS. The new name is undone as a create is; the
// file's fsync state is its inode's, so the new name has the old one's.
// A link followed by the unlink of the old name, in one cut that lands
// the unlink and not the link, leaves neither: what a cut may do before
// the directory's fsync, which is why link and unlink is followed by one.
func (j *Journal) Link(dir *os.File, from, to string) error {
	if err := (durable.Disk{}).Link(dir, from, to); err != nil {
		return err
	}
	fromPath, toPath := fsat.Join(dir, from), fsat.Join(dir, to)
	j.mu.Lock()
	defer j.mu.Unlock()
	j.ops = append(j.ops, dirOp{kind: opLink, dir: dir.Name(), path: toPath, from: fromPath})
	if n, ok := j.synced[fromPath]; ok {
		j.synced[toPath] = n
	}
	if m, ok := j.mtimes[fromPath]; ok {
		j.mtimes[toPath] = m
	}
	return nil
}

// renamed journals a rename done on disk; j.mu is held.
func (j *Journal) renamed(dir *os.File, fromPath, toPath string, prev *kept) error {
	// The paths of operations not yet durable inside a renamed directory
	// hold only while the rename is undone: taking them back under either
	// name would be wrong in some mode, so no protocol may do that.
	for _, o := range j.ops {
		if strings.HasPrefix(o.dir+"/", fromPath+"/") {
			return fmt.Errorf("%s was renamed with %s %s inside it not yet durable: the power-cut journal cannot image that", fromPath, o.kind, o.path)
		}
	}
	j.ops = append(j.ops, dirOp{kind: opRename, dir: dir.Name(), path: toPath, from: fromPath, prev: prev})
	delete(j.synced, toPath)
	delete(j.mtimes, toPath)
	// A file's fsync state follows it to its new name: a temp fsynced and
	// then renamed into place keeps its fsynced bytes at the new name, and
	// so do the files inside a renamed directory.
	for path, n := range j.synced {
		if to, ok := movedTo(path, fromPath, toPath); ok {
			delete(j.synced, path)
			j.synced[to] = n
		}
	}
	for path, m := range j.mtimes {
		if to, ok := movedTo(path, fromPath, toPath); ok {
			delete(j.mtimes, path)
			j.mtimes[to] = m
		}
	}
	return nil
}

// movedTo is path's name once from is renamed to to, and whether the
// rename moves it: from itself, or what is inside it.
func movedTo(path, from, to string) (string, bool) {
	if path == from {
		return to, true
	}
	if rest, ok := strings.CutPrefix(path, from+"/"); ok {
		return to + "/" + rest, true
	}
	return "", false
}

// Remove implements durable.FS.
func (j *Journal) Remove(dir *os.File, name string) error {
	return j.removal(dir, name, durable.Disk{}.Remove)
}

// Unlink implements durable.FS.
func (j *Journal) Unlink(dir *os.File, name string) error {
	return j.removal(dir, name, durable.Disk{}.Unlink)
}

// Rmdir implements durable.FS.
func (j *Journal) Rmdir(dir *os.File, name string) error {
	return j.removal(dir, name, durable.Disk{}.Rmdir)
}

// removal journals the removal of name inside dir that remove makes.
func (j *Journal) removal(dir *os.File, name string, remove func(*os.File, string) error) error {
	path := fsat.Join(dir, name)
	prev, err := capture(path)
	if err != nil {
		return err
	}
	if err := remove(dir, name); err != nil {
		return err
	}
	if prev == nil {
		return nil // nothing was there: no operation
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.trim(path, prev)
	j.ops = append(j.ops, dirOp{kind: opUnlink, dir: dir.Name(), path: path, prev: prev})
	delete(j.synced, path)
	delete(j.mtimes, path)
	return nil
}

// trim makes a kept copy of what was at path what a power cut leaves of
// it: a file created through the journal has only its fsynced bytes, and
// an mtime not yet fsynced is the one before.
func (j *Journal) trim(path string, k *kept) {
	if n, ok := j.synced[path]; ok && int64(len(k.data)) > max(n, 0) {
		k.data = k.data[:max(n, 0)]
	}
	if m, ok := j.mtimes[path]; ok {
		k.mtime = m
	}
}

// SyncDir implements durable.FS.
func (j *Journal) SyncDir(dir *os.File) error {
	if err := (durable.Disk{}).SyncDir(dir); err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	// A directory whose removal is now durable takes with it whatever was
	// removed inside it: no cut can bring an entry back into a directory
	// that is gone. Only what came before the removal was inside it: what
	// came after at the same name is a directory made again there, and
	// still owed to that directory's own fsync. Newest first, so that each
	// removal is seen before what preceded it.
	var gone []string
	keep := make([]bool, len(j.ops))
	for i := len(j.ops) - 1; i >= 0; i-- {
		o := j.ops[i]
		if o.dir == dir.Name() {
			if o.kind == opUnlink && o.prev.mode&unix.S_IFMT == unix.S_IFDIR {
				gone = append(gone, o.path+"/")
			}
			continue
		}
		keep[i] = !slices.ContainsFunc(gone, func(g string) bool { return strings.HasPrefix(o.dir+"/", g) })
	}
	owed := j.ops[:0]
	for i, o := range j.ops {
		if keep[i] {
			owed = append(owed, o)
		}
	}
	clear(j.ops[len(owed):])
	j.ops = owed
	return nil
}

// A Mode says which of the operations not yet made durable by a directory
// fsync still reach the disk: an fsync is the only order a power cut
// respects, so any of them may land or not, each on its own.
type Mode struct {
	Name string // names the mode in Image.Mode and in a failure message
	land func(dirOp) bool
}

// Modes are the power cuts Images offers, the plainest first.
var Modes = []Mode{
	// The plain power cut: nothing since the last directory fsync landed.
	{"nothing-lands", func(dirOp) bool { return false }},
	// The removals reached the disk, what they were to follow did not:
	// catches a removal not fenced off by a directory fsync.
	{"unlinks-land", func(o dirOp) bool { return o.kind == opUnlink }},
	// The new names reached the disk, the removals did not.
	{"names-land", func(o dirOp) bool { return o.kind != opUnlink }},
	// Every name landed, the data not fsynced did not: a file renamed
	// into place without its own fsync is there, empty.
	{"all-names-land", func(dirOp) bool { return true }},
}

// An Image is the disk a reboot finds after a power cut in one mode.
type Image struct {
	Mode string   // the Mode's name
	Dir  string   // the copy of the parent the power cut was applied to
	Lost []string // what the cut took back, for a failure message
}

// Images copies the tree under parent (which holds every directory the
// journal has written in) once for each mode that gives a different
// outcome, and takes back from each copy what that power cut loses. The
// copies are temp dirs of t. It is called at the instant of the cut, with
// the writer held still; the journal itself is left as it is.
func (j *Journal) Images(t testing.TB, parent string) []Image {
	t.Helper()
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []Image
	var unsynced []string // what every mode loses: data and mtimes not fsynced
	for path, n := range j.synced {
		var st unix.Stat_t
		if unix.Lstat(path, &st) == nil && st.Size > max(n, 0) {
			unsynced = append(unsynced, fmt.Sprintf("data of %s (%d of %d bytes kept)", filepath.Base(path), max(n, 0), st.Size))
		}
	}
	for path := range j.mtimes {
		unsynced = append(unsynced, "mtime of "+filepath.Base(path))
	}
	slices.Sort(unsynced)
	seen := map[string]bool{}
	for _, m := range Modes {
		lost := slices.Clone(unsynced)
		sig := ""
		for i, o := range j.ops {
			if !m.land(o) {
				lost = append(lost, o.kind.String()+" "+filepath.Base(o.path))
				sig += fmt.Sprint(i, ",")
			}
		}
		// Two modes that undo the same operations leave the same disk;
		// the second image would only double the test's time.
		if seen[sig] {
			continue
		}
		seen[sig] = true
		img := t.TempDir()
		CopyTree(t, parent, img)
		in := func(path string) (string, error) {
			rel, err := filepath.Rel(parent, path)
			if err != nil || strings.HasPrefix(rel, "..") {
				return "", fmt.Errorf("%s is outside %s", path, parent)
			}
			return filepath.Join(img, rel), nil
		}
		if err := j.apply(in, m); err != nil {
			t.Fatalf("%s: %v", m.Name, err)
		}
		out = append(out, Image{m.Name, img, lost})
	}
	return out
}

// Cut cuts the power in place, in the plain mode (nothing since the last
// directory fsync lands, no data or mtime since the last file fsync), and
// starts the journal afresh, as a reboot would.
func (j *Journal) Cut(t testing.TB) {
	t.Helper()
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.apply(func(p string) (string, error) { return p, nil }, Modes[0]); err != nil {
		t.Fatal(err)
	}
	j.synced, j.mtimes, j.ops = map[string]int64{}, map[string]unix.Timespec{}, nil
}

// apply takes back what the power cut m loses from the tree in maps a
// journalled path to.
func (j *Journal) apply(in func(string) (string, error), m Mode) error {
	// Data not fsynced is gone.
	for path, n := range j.synced {
		q, err := in(path)
		if err != nil {
			return err
		}
		var st unix.Stat_t
		if unix.Lstat(q, &st) == nil && fsat.IsRegular(&st) && st.Size > max(n, 0) {
			if err := os.Truncate(q, max(n, 0)); err != nil {
				return err
			}
		}
	}
	// So is an mtime set since the file's last fsync.
	for path, mt := range j.mtimes {
		q, err := in(path)
		if err != nil {
			return err
		}
		if err := setMtime(q, mt); err != nil && !errors.Is(err, unix.ENOENT) {
			return err
		}
	}
	// Directory operations that did not land are undone, newest first:
	// each undo then finds its name as the operation left it.
	for i := len(j.ops) - 1; i >= 0; i-- {
		o := j.ops[i]
		if m.land(o) {
			continue
		}
		q, err := in(o.path)
		if err != nil {
			return err
		}
		switch o.kind {
		case opCreate, opLink:
			if err := os.Remove(q); err != nil && !errors.Is(err, unix.ENOENT) {
				return err
			}
		case opMkdir:
			// Whatever was made inside hung from a name that never
			// reached the disk: it goes with it, fsynced or not.
			if err := os.RemoveAll(q); err != nil {
				return err
			}
		case opRename:
			from, err := in(o.from)
			if err != nil {
				return err
			}
			// A later removal of the new name landed (a dir renamed aside,
			// then removed): the rename reached the disk with it.
			var st unix.Stat_t
			if unix.Lstat(q, &st) != nil && removedLater(j.ops[i+1:], o.path, m) {
				continue
			}
			if err := os.Rename(q, from); err != nil {
				return err
			}
			if o.prev != nil {
				if err := o.prev.restore(q); err != nil {
					return err
				}
			}
		case opUnlink:
			// A later operation that landed put something else at the
			// name (a temp made again, a rename over it): the name's
			// newest state is the one on disk.
			var st unix.Stat_t
			if unix.Lstat(q, &st) == nil {
				continue
			}
			if err := o.prev.restore(q); err != nil {
				return err
			}
		}
	}
	return nil
}

// removedLater reports whether one of later, in a cut m lands, removed
// path.
func removedLater(later []dirOp, path string, m Mode) bool {
	for _, o := range later {
		if o.kind == opUnlink && o.path == path && m.land(o) {
			return true
		}
	}
	return false
}

// CopyTree copies the tree under from to to: directories, regular files,
// links and FIFOs, with the mtimes of all but directories. Files are made
// 0600 and directories 0700.
func CopyTree(t testing.TB, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			// No mtime: copying the entries into it changes it again.
			return os.MkdirAll(dst, 0o700)
		case unix.S_IFREG:
			b, err := os.ReadFile(p)
			if err == nil {
				err = os.WriteFile(dst, b, 0o600)
			}
			if err != nil {
				return err
			}
		case unix.S_IFLNK:
			l, _ := os.Readlink(p)
			if err := os.Symlink(l, dst); err != nil {
				return err
			}
		case unix.S_IFIFO:
			if err := unix.Mkfifo(dst, 0o600); err != nil {
				return err
			}
		}
		ts := []unix.Timespec{st.Atim, st.Mtim}
		return unix.UtimesNanoAt(unix.AT_FDCWD, dst, ts, unix.AT_SYMLINK_NOFOLLOW)
	})
	if err != nil {
		t.Fatal(err)
	}
}
