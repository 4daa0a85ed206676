package shared

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"

	"sessdb/fleet/internal/sharedfs"
	"sessdb/internal/callerctx"
	"sessdb/internal/durable"
	"sessdb/internal/faults"
	"sessdb/internal/fsat"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Write copies src into a new write-once transcript file for key's
// generation gen under dir and returns its name ("<key>/<gen>-<random>.jsonl",
// relative to dir, what the record stores), its size and its CRC32C.
//
// The bytes go to a temp name in the key's directory, are fsynced, and
// take their final name with a rename that never replaces an existing
// name (renameat2 RENAME_NOREPLACE, or link and unlink where the
// filesystem lacks it, as NFS does); then the directory is fsynced. When
// Write returns, the file is whole and durable under its name. On error
// nothing is left behind but, after a crash, a temp that ListOrphans
// reports once it is old. The key's directory is made (0700) if need be;
// a link in its place is ErrNotRegular. ctx is checked between chunks.
func Write(ctx context.Context, dir, key string, gen uint64, src io.Reader) (name string, size int64, crc uint32, err error) {
	if !ValidKey(key) {
		return "", 0, 0, &os.PathError{Op: "write", Path: dir + "/" + key, Err: ErrInvalidKey}
	}
	return writeAs(ctx, dir, key, func(rnd string) string { return fileName(gen, rnd) }, src)
}

// WriteAgain writes src, as Write does, at name under dir, a transcript
// name a record holds ("<key>/<gen>-<random>.jsonl"), for a file that is
// missing: a migration that finds the record it would make already in
// etcd and its file gone brings the file back from the key dir. A file at
// the name is never replaced (ErrExists), and nothing else the name may
// hold is touched.
func WriteAgain(ctx context.Context, dir, name string, src io.Reader) (size int64, crc uint32, err error) {
	key, _, ok := ParseName(name)
	if !ok {
		return 0, 0, &os.PathError{Op: "write", Path: dir + "/" + name, Err: ErrInvalidName}
	}
	_, size, crc, err = writeAs(ctx, dir, key, func(string) string { return name[len(key)+1:] }, src)
	return size, crc, err
}

// writeAs is Write and WriteAgain: src to a temp in key's directory, then
// renamed to final(the temp's random part), never over another name.
func writeAs(ctx context.Context, dir, key string, final func(rnd string) string, src io.Reader) (name string, size int64, crc uint32, err error) {
	ctx = callerctx.Of(ctx) // nil is context.Background()
	rnd, err := random()
	if err != nil {
		return "", 0, 0, err
	}
	tmp := tmpPrefix + rnd
	// Every write below goes through disk, the durability seam (package
	// sharedfs): in production the system calls themselves.
	disk := sharedfs.FS()
	kd, f, st, err := createTemp(disk, dir, key, tmp)
	if err != nil {
		return "", 0, 0, err
	}
	defer kd.Close()
	defer func() {
		if err != nil {
			disk.Unlink(kd, tmp)
		}
	}()
	h := crc32.New(castagnoli)
	size, err = io.Copy(io.MultiWriter(f, h), callerctx.Reader(ctx, src))
	if err == nil {
		err = disk.SyncFile(f)
	}
	if err == nil {
		err = faults.At(faults.SharedWriteSync)
	}
	cerr := f.Close()
	if cerr == nil {
		cerr = faults.At(faults.SharedWriteClose)
	}
	if err == nil {
		err = cerr
	}
	if pe := (*os.PathError)(nil); err != nil && !(errors.As(err, &pe) && pe.Path == f.Name()) {
		// The temp's own write, fsync or close names it already; the
		// source's error and a cancel do not.
		err = fmt.Errorf("write %s: %w", f.Name(), err)
	}
	if err != nil {
		return "", 0, 0, err
	}
	file := final(rnd)
	if err = noReplace(disk, kd, tmp, file); err != nil && !renamed(disk, kd, tmp, file, &st) {
		return "", 0, 0, err
	}
	// The rename is durable once the directory is; until then a power
	// cut could leave the record naming a file that is not there.
	if err = disk.SyncDir(kd); err != nil {
		disk.Unlink(kd, file)
		return "", 0, 0, err
	}
	return key + "/" + file, size, h.Sum32(), nil
}

// renamed reports whether the temp took its final name file after all,
// though noReplace said otherwise: over NFS a request whose reply was lost
// is sent again, and a server whose duplicate-request cache has forgotten
// it answers the retry as a new request, the step done (a RENAME then says
// ENOENT or EEXIST, the REMOVE of link and unlink's temp ENOENT). file is
// then the temp's own inode, st. A temp still there under that inode (its
// unlink failed) is removed; if that fails too it is only a second name of
// the file, which reap sweeps with the temps.
func renamed(disk durable.FS, kd *os.File, tmp, file string, st *unix.Stat_t) bool {
	ours := func(name string) bool {
		at, err := fsat.LstatAt(kd, name)
		return err == nil && at.Dev == st.Dev && at.Ino == st.Ino
	}
	if !ours(file) {
		return false
	}
	if ours(tmp) {
		disk.Unlink(kd, tmp)
	}
	return true
}

// createTemp opens key's directory under dir, making it if need be, and
// creates tmp in it, and returns the temp's fstat. A reap removes a key's
// directory that holds nothing and has no record, which a key's first
// promotion may find between the open and the create (the create is then
// ENOENT, or over NFS ESTALE: the server no longer knows the directory
// another host removed): the directory is made again, once.
func createTemp(disk durable.FS, dir, key, tmp string) (kd, f *os.File, st unix.Stat_t, err error) {
	for try := 0; ; try++ {
		if kd, err = openKeyDir(disk, dir, key, true); err != nil {
			if fsat.IsGone(err) && try == 0 {
				continue // removed between its mkdir and its open
			}
			return nil, nil, st, err
		}
		if err = beforeCreate(); err != nil {
			err = &os.PathError{Op: "open", Path: fsat.Join(kd, tmp), Err: err}
		} else if f, err = disk.CreateTemp(kd, tmp); err == nil {
			// The temp's inode, for renamed to know it by.
			if st, err = statTemp(f); err == nil {
				return kd, f, st, nil
			}
			f.Close()
		}
		if !errors.Is(err, unix.EEXIST) {
			// The create may have landed (the fstat in its open, or the
			// one after it, failed); the name is this Write's own,
			// random, so a removal of it is never of another's file.
			disk.Unlink(kd, tmp)
		}
		kd.Close()
		if !fsat.IsGone(err) || try == 1 {
			return nil, nil, st, err
		}
	}
}

// beforeCreate runs between the open of a key's directory and the create
// in it: a test's stand-in for a reap removing the directory then. An
// error it returns is the create's.
var beforeCreate = func() error { return nil }

// statTemp is fsat.Fstat; a variable so that a test can fail the fstat
// that follows the create.
var statTemp = fsat.Fstat

// noReplace gives the temp its final name without replacing anything
// there. A variable so that tests can take the link path on a filesystem
// that has renameat2.
var noReplace = renameNoReplace

// linkUnlink is a rename that cannot replace: link fails on an existing
// name. An NFSv3 client that retransmits a LINK whose reply was lost gets
// EEXIST for its own link; a name that is the temp's own inode is success.
func linkUnlink(disk durable.FS, kd *os.File, from, to string) error {
	err := disk.Link(kd, from, to)
	if errors.Is(err, unix.EEXIST) && sameFile(kd, from, to) {
		err = nil
	}
	if err != nil {
		if le := (*os.LinkError)(nil); errors.As(err, &le) && le.Err == unix.EEXIST {
			le.Err = ErrExists
		}
		return err
	}
	return disk.Unlink(kd, from)
}

func sameFile(kd *os.File, a, b string) bool {
	sa, err1 := fsat.LstatAt(kd, a)
	sb, err2 := fsat.LstatAt(kd, b)
	return err1 == nil && err2 == nil && sa.Dev == sb.Dev && sa.Ino == sb.Ino
}

// Open opens the transcript name under dir for reading. The name is
// checked first (ErrInvalidName); neither the key's directory nor the
// file is followed if it is a link, and anything but a regular file is
// ErrNotRegular. A name that is gone is fs.ErrNotExist.
func Open(dir, name string) (*os.File, error) {
	key, _, ok := ParseName(name)
	if !ok {
		return nil, &os.PathError{Op: "open", Path: dir + "/" + name, Err: ErrInvalidName}
	}
	kd, err := openKeyDir(nil, dir, key, false)
	if err != nil {
		return nil, err
	}
	defer kd.Close()
	// Only a regular file is opened: the open of a device runs its
	// driver, and that of a socket fails with an errno of its own, which a
	// resolve would take for a fault.
	f, _, err := fsat.OpenRegularAt(kd, name[len(key)+1:])
	if errors.Is(err, fsat.ErrNotRegular) {
		err = &os.PathError{Op: "open", Path: fsat.Join(kd, name[len(key)+1:]), Err: ErrNotRegular}
	}
	return f, err
}

// Remove removes the transcript or temp name under dir, or the key's
// directory ("<key>/") if it holds nothing: one that holds something is
// left, with an error that unwraps to ENOTEMPTY (or EEXIST). A link at the
// name is removed itself, never its target. The directory is not fsynced:
// a removal a crash undoes leaves an orphan, which reap removes again.
func Remove(dir, name string) error {
	key, file, ok := splitRemovable(name)
	if !ok {
		return &os.PathError{Op: "remove", Path: dir + "/" + name, Err: ErrInvalidName}
	}
	disk := sharedfs.FS()
	if file == "" {
		root, err := fsat.OpenDir(dir)
		if err != nil {
			return err
		}
		defer root.Close()
		return disk.Rmdir(root, key)
	}
	kd, err := openKeyDir(disk, dir, key, false)
	if err != nil {
		return err
	}
	defer kd.Close()
	return disk.Unlink(kd, file)
}

// RemoveErr is the error Remove would meet at name under dir, found
// without removing anything: an invalid name, anything but a directory at
// the key's name, a directory at a file's name (EISDIR: an unlink does
// not remove one), and the refusal of the unlink or rmdir
// (fsat.DeleteErr: the mode, an ACL, a read-only mount, an immutable or
// append-only entry, another's entry in a sticky key dir). nil where
// Remove would remove it, or find it gone. A dry run plans with it what a
// removal would do.
func RemoveErr(dir, name string) error {
	key, file, ok := splitRemovable(name)
	if !ok {
		return &os.PathError{Op: "remove", Path: dir + "/" + name, Err: ErrInvalidName}
	}
	if file == "" {
		root, err := fsat.OpenDir(dir)
		if err != nil {
			return err
		}
		defer root.Close()
		return fsat.DeleteErr(root, key)
	}
	kd, err := openKeyDir(nil, dir, key, false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer kd.Close()
	st, err := fsat.LstatAt(kd, file)
	switch {
	case fsat.IsNotExist(err):
		return nil
	case err != nil:
		return err
	case fsat.IsDir(&st):
		// Linux's answer; macOS and FreeBSD say EPERM.
		return &os.PathError{Op: "unlink", Path: fsat.Join(kd, file), Err: unix.EISDIR}
	}
	return fsat.DeleteErr(kd, file)
}

// KeyDirErr is the error Write would meet at key's directory under dir
// before it writes anything there, found without writing: anything but a
// directory at the key's name (a link, a file, a FIFO: ErrNotRegular,
// never followed), a failure to look, or this process's want of leave to
// make the temp in the directory (or, with none there yet, to make the
// directory in dir), asked as the write would be judged (fsat.AccessAt:
// the mode, an ACL, a read-only mount). nil otherwise. A dry run plans
// with it what the write would do. A want of leave is said as the write's
// refused call says it, the same cause: "mkdir <dir>/<key>", or "open
// <dir>/<key>/.tmp-<random>" (the temp's random part, which only the
// write draws, as a plan names a file to be written).
func KeyDirErr(dir, key string) error {
	if !ValidKey(key) {
		return &os.PathError{Op: "write", Path: dir + "/" + key, Err: ErrInvalidKey}
	}
	kd, err := openKeyDir(nil, dir, key, false)
	if errors.Is(err, fs.ErrNotExist) {
		return saidAs("mkdir", dir+"/"+key, DirWriteErr(dir))
	}
	if err != nil {
		return err
	}
	defer kd.Close()
	return saidAs("open", fsat.Join(kd, tmpPrefix+"<random>"), fsat.AccessAt(kd, ".", unix.W_OK|unix.X_OK))
}

// saidAs is err, a look's refusal (fsat.AccessAt's "access <dir>"), said
// as the call op at path it stands for would say it, the same cause; an
// error that is no look's refusal is err as it is.
func saidAs(op, path string, err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) && pe.Op == "access" {
		return &os.PathError{Op: op, Path: path, Err: pe.Err}
	}
	return err
}

// DirWriteErr is the error a write in dir itself (an entry made or removed
// there: a key dir) would meet, found without writing: a failure to open
// dir, or this process's want of leave, asked as the write would be judged
// (fsat.AccessAt). nil otherwise.
func DirWriteErr(dir string) error {
	root, err := fsat.OpenDir(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	return fsat.AccessAt(root, ".", unix.W_OK|unix.X_OK)
}

// openKeyDir opens dir (the operator's path: followed) and key's directory
// in it (never followed), making it first through disk if create is set.
func openKeyDir(disk durable.FS, dir, key string, create bool) (*os.File, error) {
	root, err := fsat.OpenDir(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	made := false
	if create {
		if made, err = disk.Mkdir(root, key, 0o700); err != nil {
			return nil, err
		}
	}
	kd, err := fsat.OpenDirAt(root, key)
	if errors.Is(err, fsat.ErrNotDir) {
		err = &os.PathError{Op: "open", Path: fsat.Join(root, key), Err: errKeyNameNotDir}
	}
	if err != nil || !create {
		return kd, err
	}
	// The key directory's own name must be durable before a record names
	// a file in it. One found empty may be another writer's first Write
	// of the key, made just now and not yet fsynced into the transcripts
	// dir (descheduled between its mkdir and its fsync): this Write must
	// not be acknowledged on that writer's fsync. One that holds anything
	// is durably named already: every Write fsyncs the dir, after its own
	// mkdir or on finding the key's directory empty, before it makes a
	// name inside. (Not a listing: one entry is looked for, once per
	// Write; the fsync then paid once per key's first Writes.)
	if !made {
		if made, err = isEmpty(kd); err != nil {
			kd.Close()
			return nil, err
		}
	}
	if made {
		if err := disk.SyncDir(root); err != nil {
			kd.Close()
			return nil, err
		}
	}
	return kd, nil
}

// isEmpty reports whether the directory d, just opened, holds no entry.
// It reads d's entries from d's own offset: d is not read again.
func isEmpty(d *os.File) (bool, error) {
	_, err := d.Readdirnames(1)
	if err == io.EOF {
		return true, nil
	}
	return false, err
}
