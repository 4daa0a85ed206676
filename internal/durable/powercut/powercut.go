// Package powercut is a test helper: a durability journal that implements
// durable.FS and can take back, after the fact, everything a power failure
// could still lose. Every call goes to disk as usual; the journal records
// what is not yet durable:
//
//   - file data written, cut short or rewritten since the file's last
//     fsync (a file created through the journal has only what it had at
//     its last fsync, nothing if it was never fsynced);
//   - an mtime set since the file's last fsync (it goes back);
//   - a mode set (Chmod) since the inode's last fsync, a file's
//     (SyncFile) or a directory's (SyncDir): it goes back;
//   - mkdirs, creates, links, renames and removals in a directory since
//     that directory's last fsync: a create or a link vanishes, a
//     directory made vanishes with everything in it, a rename goes back
//     (and what it replaced comes back), a removed entry reappears, so
//     the journal keeps
//     the bytes (a link's target, a FIFO's or an empty directory's mode) of
//     everything it removes or renames over, and its mtime; a directory
//     whose every operation not yet durable a cut undoes gets back the
//     mtime it had before them.
//
// A file's fsync state is the file's own, kept by its identity (device
// and inode), not by a name: an fsync, a write or a SetMtime through a
// descriptor opened before a rename or a link is the file's at each name
// it has then. The journal follows the names of the files it owes
// something for through its own creates, links, renames and removals (and
// the name a SetMtime is given), and a name that no longer holds the file
// (written again outside the journal) is left alone. It forgets a file
// once it knows it by no name, so that the next file given its inode is
// judged as its own; an fsync through a descriptor after that is not
// booked.
//
// A directory is known by its path too: its name (os.File.Name), or, for
// one moved since it was opened, the name its descriptor has now (Linux's
// /proc/self/fd). An operation in one for which no name is found (removed,
// or no /proc) is refused, never booked to whatever is at its old name
// now, and so is an fsync of one.
//
// A SIGKILL leaves the page cache intact, so only a journal like this one
// catches a missing fsync. Writes that do not pass through it (bbolt's,
// and package db's unless a test arms the journal as its seam, package
// durable/dbseam) are durable by their own protocols and are taken as they
// are at the instant of the cut. Armed, db books through Made the files it
// makes itself, and through Handed the moment a copy's data becomes
// bbolt's.
//
// Which of a directory's un-fsynced operations a power cut loses is ordered
// by nothing but an fsync, so Images offers several outcomes (Modes); Cut
// takes the plainest one in place. Only tests import this package.
package powercut

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/internal/durable"
	"sessdb/internal/durable/dbseam"
	"sessdb/internal/fsat"
)

// Journal is a durable.FS that records what a power cut would take back.
// It is safe for concurrent use; Images and Cut must be called while no
// write is in flight.
type Journal struct {
	mu    sync.Mutex
	files map[fileID]*file  // what a power cut owes each file
	names map[string]fileID // the names the journal knows those files by
	ops   []dirOp           // not yet durable, oldest first
}

// fileID is a file's identity, which every name and every descriptor of
// it share.
type fileID struct{ dev, ino uint64 }

func idOf(st *unix.Stat_t) fileID { return fileID{uint64(st.Dev), uint64(st.Ino)} }

// file is what a power cut owes one file.
type file struct {
	// made: created through the journal, whose writes it can take back
	// (another file's writes did not pass through it: see the package doc).
	made bool
	// synced is a made file's bytes at its last fsync: a cut gives them
	// back whatever was written, cut short or rewritten since.
	synced []byte
	// mtime is the mtime before a SetMtime not yet fsynced; nil none.
	mtime *unix.Timespec
	// mode is the permission bits before a Chmod not yet fsynced; nil
	// none. A directory's too: a cut takes back a mode repair of a key
	// dir or a root that was never fsynced.
	mode *uint32
}

var _ dbseam.FS = (*Journal)(nil)

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
	// before is dir's mtime before the operation (zero: unknown): a cut
	// that undoes every operation still owed in dir dates it so again
	// (reap judges an empty key dir by its mtime).
	before unix.Timespec
}

// where is where dir is now, and its mtime: the journal books what is
// done in a directory by its path. That is its name (os.File.Name), or,
// for one moved since it was opened (a key dir check --quarantine moved
// aside while a writer waited for its lock, and where the writer then
// takes away the meta.db its open made), the name the system gives its
// descriptor (Linux's /proc/self/fd), checked to hold it. Booked at the
// old name, a removal would land in every cut however long its fsync was
// owed, and a create, a rename or an fsync would be booked to whatever
// dir is there now; so a directory no name is found for (removed, or no
// /proc) is refused.
func where(dir *os.File) (string, unix.Timespec, error) {
	st, err := fsat.Fstat(dir)
	if err != nil {
		return "", unix.Timespec{}, err
	}
	for _, path := range []string{dir.Name(), nameOfFD(dir)} {
		var at unix.Stat_t
		if path != "" && unix.Lstat(path, &at) == nil && idOf(&at) == idOf(&st) {
			return path, st.Mtim, nil
		}
	}
	return "", unix.Timespec{}, fmt.Errorf("%s is no longer at that name (moved or removed outside the power-cut journal), and no other name of it is found: the journal cannot book what is done in it", dir.Name())
}

// join is name's path in the directory at dpath, as fsat.Join makes it
// from a descriptor's name.
func join(dpath, name string) string {
	if name == "." {
		return dpath
	}
	return dpath + "/" + name
}

// nameOfFD is the path the system gives f's descriptor, "" when it gives
// none.
func nameOfFD(f *os.File) string {
	p, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", f.Fd()))
	if err != nil || !filepath.IsAbs(p) {
		return ""
	}
	return p
}

// kept is an entry the journal can put back: its type and permissions,
// the bytes of a regular file or a link's target, and its mtime.
type kept struct {
	mode  uint32
	data  []byte
	mtime unix.Timespec
	id    fileID
	// file is what a cut owes the file kept (nil: nothing), as of the cut:
	// an fsync through another name or a descriptor after the removal
	// counts.
	file *file
}

// New returns an empty journal: nothing is owed to a power cut yet.
func New() *Journal {
	return &Journal{files: map[fileID]*file{}, names: map[string]fileID{}}
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
	k := &kept{mode: uint32(st.Mode), mtime: st.Mtim, id: idOf(&st)}
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

// restore puts k back at path as a power cut leaves it: a file made
// through the journal with only its fsynced bytes, an mtime not yet
// fsynced the one before.
func (k *kept) restore(path string) error {
	perm := k.mode & 0o7777
	data, mtime := k.data, k.mtime
	if k.file != nil && k.file.made {
		data = k.file.synced
	}
	if k.file != nil && k.file.mtime != nil {
		mtime = *k.file.mtime
	}
	if k.file != nil && k.file.mode != nil {
		perm = *k.file.mode
	}
	var err error
	switch k.mode & unix.S_IFMT {
	case unix.S_IFREG:
		if err = os.WriteFile(path, data, 0o600); err == nil {
			err = os.Chmod(path, os.FileMode(perm))
		}
	case unix.S_IFLNK:
		err = os.Symlink(string(k.data), path)
	case unix.S_IFIFO:
		err = unix.Mkfifo(path, perm)
	case unix.S_IFDIR:
		err = os.Mkdir(path, os.FileMode(perm))
	}
	if err != nil {
		return err
	}
	return setMtime(path, mtime)
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
	dpath, before, err := where(dir)
	if err != nil {
		return false, err
	}
	made, err := durable.Disk{}.Mkdir(dir, name, perm)
	if made {
		j.mu.Lock()
		j.ops = append(j.ops, dirOp{kind: opMkdir, dir: dpath, path: join(dpath, name), before: before})
		j.mu.Unlock()
	}
	return made, err
}

// CreateTemp implements durable.FS.
func (j *Journal) CreateTemp(dir *os.File, name string) (*os.File, error) {
	dpath, before, err := where(dir)
	if err != nil {
		return nil, err
	}
	f, err := durable.Disk{}.CreateTemp(dir, name)
	if err != nil {
		return f, err
	}
	st, err := fsat.Fstat(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	// A new file: whatever the journal knew by its inode was another's.
	path := join(dpath, name)
	j.files[idOf(&st)] = &file{made: true}
	j.names[path] = idOf(&st)
	j.ops = append(j.ops, dirOp{kind: opCreate, dir: dpath, path: path, before: before})
	return f, nil
}

// Made implements dbseam.FS: f, at name in dir, made outside the journal
// (db's temp, locked before it had a name), booked as CreateTemp's would
// be, its name durable once dir is synced. Its mtime before the create is
// not known: a cut that undoes every operation in dir leaves dir's mtime
// as it is. owed: its data is the journal's to take back until SyncFile,
// as a file CreateTemp made; otherwise it is taken as it is at the cut
// (bbolt fdatasyncs what it writes).
func (j *Journal) Made(dir *os.File, name string, f *os.File, owed bool) error {
	dpath, _, err := where(dir)
	if err != nil {
		return err
	}
	path := join(dpath, name)
	st, err := fsat.Fstat(f)
	if err != nil {
		return err
	}
	var at unix.Stat_t
	if err := unix.Lstat(path, &at); err != nil || idOf(&at) != idOf(&st) {
		return fmt.Errorf("%s does not hold the file the power-cut journal was told was made there (%v)", path, err)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.ops = append(j.ops, dirOp{kind: opCreate, dir: dpath, path: path})
	if owed {
		j.files[idOf(&st)] = &file{made: true}
		j.names[path] = idOf(&st)
	}
	return nil
}

// Handed implements dbseam.FS: f's data is bbolt's from here on, taken as
// it is at a cut. A copy not fsynced before it is handed is durable in
// reality only at bbolt's first commit; the journal, gentler, takes it so
// at once: a cut must come before Handed to catch that fsync's absence.
func (j *Journal) Handed(f *os.File) {
	st, err := fsat.Fstat(f)
	if err != nil {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if fl := j.files[idOf(&st)]; fl != nil {
		fl.made, fl.synced = false, nil
	}
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
	fl := j.files[idOf(&st)]
	if fl == nil {
		return nil
	}
	fl.mtime, fl.mode = nil, nil
	if fl.made {
		// f was opened for writing only: its bytes are read at a name the
		// journal knows, wherever f was opened.
		b, err := j.read(idOf(&st))
		if err != nil {
			return fmt.Errorf("%s: %w", f.Name(), err)
		}
		fl.synced = b
	}
	return nil
}

// read is the bytes of the file id, read at a name of it the journal
// knows; j.mu is held.
func (j *Journal) read(id fileID) ([]byte, error) {
	for _, path := range slices.Sorted(maps.Keys(j.names)) {
		if j.names[path] != id {
			continue
		}
		f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW, 0)
		if err != nil {
			continue
		}
		b, err := readIf(f, id)
		f.Close()
		if err == nil && b != nil {
			return b, nil
		}
	}
	return nil, errors.New("no name the power-cut journal knows holds this file (moved outside it): it cannot keep what the fsync made durable")
}

// readIf is f's bytes if f is the file id, never nil then (an empty
// file's are empty); nil if it is another.
func readIf(f *os.File, id fileID) ([]byte, error) {
	st, err := fsat.Fstat(f)
	if err != nil || idOf(&st) != id {
		return nil, err
	}
	b, err := io.ReadAll(f)
	if b == nil {
		b = []byte{}
	}
	return b, err
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
	if fl := j.booked(&st, fsat.Join(dir, name)); fl.mtime == nil {
		fl.mtime = &st.Mtim
	}
	return nil
}

// booked is the journal's record of the inode st describes, made if it
// has none, with path booked as its name: where a metadata change
// (SetMtime, Chmod) not yet fsynced is given back by a cut. j.mu is held.
func (j *Journal) booked(st *unix.Stat_t, path string) *file {
	id := idOf(st)
	fl := j.files[id]
	if fl == nil {
		fl = &file{}
		j.files[id] = fl
	}
	j.names[path] = id
	return fl
}

// Chmod implements durable.FS: the mode f had before the first Chmod
// since its inode's last fsync is what a cut gives back, booked at f's
// name (its path, as fsat.Join makes it; f may be O_PATH).
func (j *Journal) Chmod(f *os.File, mode uint32) error {
	st, err := fsat.Fstat(f)
	if err != nil {
		return err
	}
	if err := (durable.Disk{}).Chmod(f, mode); err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if fl := j.booked(&st, f.Name()); fl.mode == nil {
		before := uint32(st.Mode) & 0o7777
		fl.mode = &before
	}
	return nil
}

// Rename implements durable.FS.
func (j *Journal) Rename(dir *os.File, from, to string) error {
	dpath, before, err := where(dir)
	if err != nil {
		return err
	}
	fromPath, toPath := join(dpath, from), join(dpath, to)
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
		prev.file = j.files[prev.id]
	}
	return j.renamed(dpath, fromPath, toPath, prev, before)
}

// RenameNoReplace implements durable.FS. It is journalled as a rename
// that replaced nothing; where the system has no atomic no-replace rename
// (fsat's link-then-unlink fallback) a cut could also leave both names,
// which the journal does not image.
func (j *Journal) RenameNoReplace(dir *os.File, from, to string) error {
	dpath, before, err := where(dir)
	if err != nil {
		return err
	}
	if err := (durable.Disk{}).RenameNoReplace(dir, from, to); err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.renamed(dpath, join(dpath, from), join(dpath, to), nil, before)
}

// RenameNoReplaceAtomic implements durable.FS: a rename that replaced
// nothing, as RenameNoReplace's.
func (j *Journal) RenameNoReplaceAtomic(dir *os.File, from, to string) error {
	dpath, before, err := where(dir)
	if err != nil {
		return err
	}
	if err := (durable.Disk{}).RenameNoReplaceAtomic(dir, from, to); err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.renamed(dpath, join(dpath, from), join(dpath, to), nil, before)
}

// Link implements durable.FS. The new name is undone as a create is; the
// file's fsync state is its inode's, which the new name shares.
// A link followed by the unlink of the old name, in one cut that lands
// the unlink and not the link, leaves neither: what a cut may do before
// the directory's fsync, which is why link and unlink is followed by one.
func (j *Journal) Link(dir *os.File, from, to string) error {
	dpath, before, err := where(dir)
	if err != nil {
		return err
	}
	if err := (durable.Disk{}).Link(dir, from, to); err != nil {
		return err
	}
	fromPath, toPath := join(dpath, from), join(dpath, to)
	j.mu.Lock()
	defer j.mu.Unlock()
	j.ops = append(j.ops, dirOp{kind: opLink, dir: dpath, path: toPath, from: fromPath, before: before})
	// The new name is known by what it holds: the name linked from may be
	// one the journal knows for a file gone from it.
	var st unix.Stat_t
	if unix.Lstat(toPath, &st) == nil && j.files[idOf(&st)] != nil {
		j.names[toPath] = idOf(&st)
	}
	return nil
}

// renamed journals a rename done on disk; j.mu is held.
func (j *Journal) renamed(dpath, fromPath, toPath string, prev *kept, before unix.Timespec) error {
	// The paths of operations not yet durable inside a renamed directory
	// hold only while the rename is undone: taking them back under either
	// name would be wrong in some mode, so no protocol may do that.
	for _, o := range j.ops {
		if strings.HasPrefix(o.dir+"/", fromPath+"/") {
			return fmt.Errorf("%s was renamed with %s %s inside it not yet durable: the power-cut journal cannot image that", fromPath, o.kind, o.path)
		}
	}
	j.ops = append(j.ops, dirOp{kind: opRename, dir: dpath, path: toPath, from: fromPath, prev: prev, before: before})
	replaced, had := j.names[toPath]
	delete(j.names, toPath)
	// The names move with the rename: a temp fsynced and then renamed
	// into place is found, with its fsync state, at the new name, and so
	// are the files inside a renamed directory.
	moved := map[string]fileID{}
	for path, id := range j.names {
		if to, ok := movedTo(path, fromPath, toPath); ok {
			delete(j.names, path)
			moved[to] = id
		}
	}
	maps.Copy(j.names, moved)
	if had {
		j.forget(replaced)
	}
	return nil
}

// forget drops what is owed to the file id once the journal knows it by
// no name: its inode may be another file's next. A kept copy of it keeps
// its own pointer. j.mu is held.
func (j *Journal) forget(id fileID) {
	for _, other := range j.names {
		if other == id {
			return
		}
	}
	delete(j.files, id)
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
	dpath, before, err := where(dir)
	if err != nil {
		return err
	}
	path := join(dpath, name)
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
	prev.file = j.files[prev.id]
	j.ops = append(j.ops, dirOp{kind: opUnlink, dir: dpath, path: path, prev: prev, before: before})
	if id, ok := j.names[path]; ok {
		delete(j.names, path)
		j.forget(id)
	}
	return nil
}

// SyncDir implements durable.FS.
func (j *Journal) SyncDir(dir *os.File) error {
	// What is owed is booked by the directory's path: an fsync of one
	// moved lands what is owed where it is now, not what is owed to the
	// one at its old name.
	dpath, _, err := where(dir)
	if err != nil {
		return err
	}
	if err := (durable.Disk{}).SyncDir(dir); err != nil {
		return err
	}
	st, err := fsat.Fstat(dir)
	if err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	// The fsync of a directory is its inode's too: its mode is durable.
	if fl := j.files[idOf(&st)]; fl != nil {
		fl.mode = nil
	}
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
		if o.dir == dpath {
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
	debts, err := j.debts()
	if err != nil {
		t.Fatal(err)
	}
	var unsynced []string // what every mode loses: data and mtimes not fsynced
	for _, d := range debts {
		n, base := len(d.fl.synced), filepath.Base(d.path)
		switch {
		case !d.dataOwed():
		case d.grown():
			unsynced = append(unsynced, fmt.Sprintf("data of %s (%d of %d bytes kept)", base, n, len(d.now)))
		default:
			unsynced = append(unsynced, fmt.Sprintf("data of %s (its %d fsynced bytes back in place of %d cut short or rewritten)", base, n, len(d.now)))
		}
		if d.fl.mtime != nil {
			unsynced = append(unsynced, "mtime of "+base)
		}
		if d.fl.mode != nil {
			unsynced = append(unsynced, "mode of "+base)
		}
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
		if err := j.apply(in, m, debts); err != nil {
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
	debts, err := j.debts()
	if err == nil {
		err = j.apply(func(p string) (string, error) { return p, nil }, Modes[0], debts)
	}
	if err != nil {
		t.Fatal(err)
	}
	j.files, j.names, j.ops = map[fileID]*file{}, map[string]fileID{}, nil
}

// debt is what a cut owes a file at one of its names.
type debt struct {
	path string
	fl   *file
	now  []byte // a made file's bytes now
}

// dataOwed reports whether the file's bytes are not those of its last
// fsync.
func (d debt) dataOwed() bool { return d.fl.made && !bytes.Equal(d.now, d.fl.synced) }

// grown reports whether only bytes past the fsynced ones were written, so
// that a truncate takes them back.
func (d debt) grown() bool {
	return len(d.now) > len(d.fl.synced) && bytes.HasPrefix(d.now, d.fl.synced)
}

// debts is what a cut owes at each name of a file the journal owes
// something, in the names' order; a name that holds the file no more (it
// was removed or written again outside the journal) owes nothing. j.mu is
// held.
func (j *Journal) debts() ([]debt, error) {
	var out []debt
	for _, path := range slices.Sorted(maps.Keys(j.names)) {
		id := j.names[path]
		fl := j.files[id]
		var st unix.Stat_t
		if err := unix.Lstat(path, &st); err != nil {
			if err == unix.ENOENT {
				continue
			}
			return nil, &os.PathError{Op: "lstat", Path: path, Err: err}
		}
		// A directory owes a cut only its mode (Chmod).
		if fl == nil || !(fsat.IsRegular(&st) || fsat.IsDir(&st)) || idOf(&st) != id {
			continue
		}
		d := debt{path: path, fl: fl}
		if fl.made {
			b, err := os.ReadFile(path)
			if err != nil {
				return nil, err
			}
			d.now = b
		}
		if d.dataOwed() || fl.mtime != nil || fl.mode != nil {
			out = append(out, d)
		}
	}
	return out, nil
}

// apply takes back what the power cut m loses from the tree in maps a
// journalled path to: debts, then the directory operations m does not
// land.
func (j *Journal) apply(in func(string) (string, error), m Mode, debts []debt) error {
	// Data not fsynced is gone, and so is an mtime set since the file's
	// last fsync.
	for _, d := range debts {
		q, err := in(d.path)
		if err != nil {
			return err
		}
		switch {
		case !d.dataOwed():
		case d.grown():
			err = os.Truncate(q, int64(len(d.fl.synced)))
		default:
			err = os.WriteFile(q, d.fl.synced, 0o600)
		}
		if err != nil {
			return err
		}
		if d.fl.mtime != nil {
			if err := setMtime(q, *d.fl.mtime); err != nil {
				return err
			}
		}
	}
	dates, err := datesAfter(in, j.ops, m)
	if err != nil {
		return err
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
	// A mode set since its inode's last fsync goes back, once the
	// operations inside a directory are undone (its old mode may forbid
	// them to a user that is not root).
	for _, d := range debts {
		if d.fl.mode == nil {
			continue
		}
		q, err := in(d.path)
		if err != nil {
			return err
		}
		if err := unix.Chmod(q, *d.fl.mode); err != nil {
			return &os.PathError{Op: "chmod", Path: q, Err: err}
		}
	}
	for _, q := range slices.Sorted(maps.Keys(dates)) {
		if err := setMtime(q, dates[q]); err != nil && !errors.Is(err, unix.ENOENT) {
			return err
		}
	}
	return nil
}

// datesAfter is the mtime each directory with an operation still owed
// has after the cut m, by its path in the tree in maps to: as it was
// before the first of them where m undoes every one (its inode never
// reached the disk changed), else its newest, read before m's undos
// change it. A directory not there yet (its removal is undone) is dated
// only in the first case.
func datesAfter(in func(string) (string, error), ops []dirOp, m Mode) (map[string]unix.Timespec, error) {
	dirs, landed := map[string]bool{}, map[string]bool{}
	first := map[string]unix.Timespec{} // the first undone operation's before
	for _, o := range ops {
		dirs[o.dir] = true
		if m.land(o) {
			landed[o.dir] = true
		} else if _, ok := first[o.dir]; !ok {
			first[o.dir] = o.before
		}
	}
	out := map[string]unix.Timespec{}
	for dir := range dirs {
		q, err := in(dir)
		if err != nil {
			return nil, err
		}
		if before := first[dir]; !landed[dir] && before != (unix.Timespec{}) {
			out[q] = before
			continue
		}
		var st unix.Stat_t
		if err := unix.Lstat(q, &st); err == nil {
			out[q] = st.Mtim
		} else if !errors.Is(err, unix.ENOENT) {
			return nil, &os.PathError{Op: "lstat", Path: q, Err: err}
		}
	}
	return out, nil
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
// links and FIFOs, with their mtimes (a directory's too: reap judges an
// empty key dir by it). Files are made 0600 and directories 0700.
func CopyTree(t testing.TB, from, to string) {
	t.Helper()
	var dirs []string
	var mtimes []unix.Timespec
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
			// Dated once its entries are in: copying them changes it.
			dirs, mtimes = append(dirs, dst), append(mtimes, st.Mtim)
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
	for i := 0; err == nil && i < len(dirs); i++ {
		err = setMtime(dirs[i], mtimes[i])
	}
	if err != nil {
		t.Fatal(err)
	}
}
