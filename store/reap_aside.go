package store

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"

	"golang.org/x/sys/unix"

	"sessdb/db"
	"sessdb/internal/faults"
	"sessdb/internal/fsat"
	"sessdb/store/legacy"
)

// Names under the root that are not keys but the store's own: a key dir a
// reap renamed aside to remove it, and one check --quarantine moved aside.
// Neither is 32 lowercase hex, so no resolve ever finds one; each carries
// the key it was, so that an operator (and reap's restore) can tell.
const (
	// ReapedPrefix starts the name a reap gives a key dir it removes:
	// .reaped-<key>-<16 hex random>. A reap that is interrupted leaves
	// it; the next reap, or check --repair, finishes it.
	ReapedPrefix = ".reaped-"
	// QuarantinePrefix starts the name check --quarantine gives a key dir
	// it moves aside: .quarantine-<key>-<UTC time>[-n]. sessdb never
	// removes one.
	QuarantinePrefix = ".quarantine-"
)

var (
	reapedName     = regexp.MustCompile(`^\.reaped-([0-9a-f]{32})-[0-9a-f]{16}$`)
	quarantineName = regexp.MustCompile(`^\.quarantine-([0-9a-f]{32})-[0-9]{8}T[0-9]{6}Z(-[0-9]{1,3})?$`)
)

// ReapedKey returns the key a reap-owned dir's name carries, and whether
// name is one (exactly as a reap names it: a look-alike is no key's and
// is left alone).
func ReapedKey(name string) (string, bool) {
	m := reapedName.FindStringSubmatch(name)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// QuarantinedKey returns the key a quarantine dir's name carries, and
// whether name is one.
func QuarantinedKey(name string) (string, bool) {
	m := quarantineName.FindStringSubmatch(name)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// storeEntry reports whether a key dir's entry n, of the type st, is one
// the store writes, and so may remove: a regular file or a link (unlinked,
// never followed) at the transcript's, meta.db's or a legacy sidecar's
// name, a temp, or a damaged meta.db a repair moved aside.
func storeEntry(n string, st *unix.Stat_t) bool {
	if !fsat.IsRegular(st) && !isLink(st) {
		return false
	}
	switch {
	case n == TranscriptName, n == db.FileName, legacy.IsName(n):
		return true
	}
	for _, p := range []string{tmpPrefix, db.TempPrefix, AsidePrefix} {
		if strings.HasPrefix(n, p) {
			return true
		}
	}
	return false
}

// foreignEntries returns, in name order, what in kd is not the store's to
// remove, each as "<name> is a <kind>" for the report.
func foreignEntries(kd *os.File) ([]string, error) {
	names, err := fsat.ReadDirNames(kd)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range sortedCopy(names) {
		st, err := fsat.LstatAt(kd, n)
		switch {
		case fsat.IsNotExist(err):
			continue
		case err != nil:
			return nil, err
		case !storeEntry(n, &st):
			out = append(out, fmt.Sprintf("%q is a %s", n, fsat.Kind(&st)))
		}
	}
	return out, nil
}

// refuseForeign is the error that leaves a key whole because of what
// foreignEntries found in it; what says what was being done.
func refuseForeign(what string, foreign []string) error {
	return fmt.Errorf("%s %s, %w; nothing was removed", what, strings.Join(foreign, ", "), ErrForeignEntry)
}

// renameAside renames the dir from under root to the first of next(1),
// next(2), ... that no entry has, never over an existing one, and makes
// the rename durable; it returns the name it took. A dir the file system
// will not rename (EXDEV: overlayfs, a dir of a lower layer) is
// ErrDirNotMovable.
func (s *Store) renameAside(root *os.File, from string, next func(n int) string) (string, error) {
	for n := 1; ; n++ {
		to := next(n)
		err := s.renameDirNoReplace(root, from, to)
		if errors.Is(err, unix.EEXIST) && n < 100 {
			continue
		}
		if errors.Is(err, unix.EXDEV) {
			return "", fmt.Errorf("%w: %w", err, ErrDirNotMovable)
		}
		if err != nil {
			return "", err
		}
		return to, s.disk.syncDir(root)
	}
}

// movedDir returns kd, the dir just renamed to name under root, as a
// descriptor named for where it is now: what is written in it from then
// on is journalled at its new name (and an error names where it is).
func movedDir(root, kd *os.File, name string) (*os.File, error) {
	// Close-on-exec in the one call: a child forked between a dup and
	// its CloseOnExec would keep the key dir open past its exec.
	fd, err := unix.FcntlInt(kd.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "dup", Path: kd.Name(), Err: err}
	}
	return os.NewFile(uintptr(fd), fsat.Join(root, name)), nil
}

// renameDirNoReplace renames the directory from to to under root, failing
// with EEXIST if to exists. fsat.RenameNoReplace is one atomic step where
// the system has one; its fallback links, which a directory refuses
// (EPERM): then an empty directory is made at to (which fails on any
// existing name) and from renamed over it, which rename(2) allows for an
// empty directory only. A crash between the two leaves an empty directory
// under a name of the store's own, which the walks report.
func (s *Store) renameDirNoReplace(root *os.File, from, to string) error {
	err := s.disk.renameNoReplace(root, from, to)
	if !errors.Is(err, unix.EPERM) {
		return err
	}
	made, err := s.disk.mkdir(root, to, 0o700)
	if err != nil {
		return err // a *PathError naming to already
	}
	if !made {
		return &os.PathError{Op: "mkdir", Path: fsat.Join(root, to), Err: unix.EEXIST}
	}
	if err := s.disk.rename(root, from, to); err != nil {
		s.disk.remove(root, to)
		return err
	}
	return nil
}

// newReapedName is a fresh reap-owned name for key. (crypto/rand's Read
// never fails since Go 1.24.)
func newReapedName(key string) string {
	var rnd [8]byte
	rand.Read(rnd[:])
	return ReapedPrefix + key + "-" + hex.EncodeToString(rnd[:])
}

// removeAside removes the dir name under root, whose descriptor is kd (a
// reap-owned dir, or a key dir a reap removes in place when the file
// system has no room to rename it): every entry relative to kd, never
// following a link and never descending, the transcript first and meta.db
// last (its name is the key's lock: a writer that waited for it finds it
// gone and fails, and the dir too), then the dir, made durable. The
// caller holds the key's lock when there is one, through d (nil when the
// dir has no meta.db), whose file is closed once unlinked and before the
// rmdir: NFS and libfuse's file systems (sshfs) keep an open file they
// were told to unlink under a hidden name until its last close, and the
// dir is not empty until then. An entry that is not the store's stops it
// before anything is removed.
func (s *Store) removeAside(root, kd *os.File, name string, d *db.DB) error {
	if err := onlyTheStores(kd, name); err != nil {
		return err
	}
	if err := removable(root, kd, name, false); err != nil {
		return err
	}
	if err := s.disk.remove(kd, TranscriptName); err != nil {
		return err
	}
	if err := s.fault(faults.ReapAfterTranscript); err != nil {
		return err
	}
	names, err := fsat.ReadDirNames(kd)
	if err != nil {
		return err
	}
	var errs []error
	for _, n := range names {
		if n == db.FileName {
			continue
		}
		if err := s.disk.remove(kd, n); err != nil {
			errs = append(errs, err)
		}
	}
	if err := s.disk.remove(kd, db.FileName); err != nil {
		errs = append(errs, err)
	} else if d != nil {
		d.CloseFile() // its error: the rmdir's to tell
	}
	if len(errs) == 0 {
		if err := s.disk.remove(root, name); err != nil {
			errs = append(errs, err)
		} else if err := s.disk.syncDir(root); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// reapingOutcome is the history outcome a reap records in a key's meta.db,
// under its lock, just before it renames the key dir aside: from then on a
// promotion in that dir (one that waited for the lock while the reap was
// killed) is told from what was reaped, and the next reap moves it back.
const reapingOutcome = "reaping"

// landedAfterReap reports whether a promotion is recorded after the last
// reaping entry of history (or in a history with none: a meta.db a
// waiting writer made after the reap removed the one it locked).
func landedAfterReap(history []db.HistoryEntry) (uint64, bool) {
	for i := len(history) - 1; i >= 0; i-- {
		switch history[i].Outcome {
		case "":
			return history[i].Gen, true
		case reapingOutcome:
			return 0, false
		}
	}
	return 0, false
}

// reapedState opens the reap-owned dir name under root and reads whether a
// promotion landed in it after its reap was interrupted, under the lock of
// its meta.db if it has one (exclusive with write). The caller closes what
// it returns; d is nil without a meta.db.
//
// A dir found with no meta.db may be a reap's at work: after its meta.db
// is unlinked and before the dir is; and, where the system has no atomic
// no-replace rename (FreeBSD, an NFS client), between the two steps of
// renameDirNoReplace, an empty dir made at the reap-owned name, then the
// key dir renamed over it. Such a dir is looked at again once the reap is
// done (waitForReap), and what that look finds is returned. Without the
// wait a look in between reported an interrupted reap, a problem, of a
// reap at work, and a second reap removed what the first was removing
// and reported it finished.
func (s *Store) reapedState(root *os.File, name string, write bool) (kd *os.File, d *db.DB, gen uint64, landed bool, err error) {
	kd, d, gen, landed, err = s.reapedLook(root, name, write)
	if err != nil || d != nil {
		return kd, d, gen, landed, err
	}
	kd.Close()
	if err := s.fault(faults.ReapedNoMeta); err != nil {
		return nil, nil, 0, false, err
	}
	s.waitForReap(root, name)
	return s.reapedLook(root, name, write)
}

// reapedLook is one look of reapedState.
func (s *Store) reapedLook(root *os.File, name string, write bool) (kd *os.File, d *db.DB, gen uint64, landed bool, err error) {
	kd, err = fsat.OpenDirAt(root, name)
	if err != nil {
		return nil, nil, 0, false, err
	}
	if !write {
		if err := s.fault(faults.CheckReapedDirOpen); err != nil {
			kd.Close()
			return nil, nil, 0, false, err
		}
	}
	st, err := fsat.LstatAt(kd, db.FileName)
	switch {
	case fsat.IsNotExist(err):
		return kd, nil, 0, false, nil
	case err != nil:
	case !fsat.IsRegular(&st):
		// Not a file any writer could have committed to; what removes
		// the dir reports it.
		return kd, nil, 0, false, nil
	default:
		o := s.dbOptions()
		// Never made here: a meta.db gone since the look was unlinked by
		// the reap still removing this dir (meta.db last, then the dir),
		// or by one that finished it; one made now would keep that
		// reap's rmdir from succeeding, and it would report the key it
		// removed as failed. Gone, the dir is that reap's: skipped.
		o.BeforeWrite = func() error {
			// Still there: a meta.db of more names than one, which a
			// writer's open gives a file of its own first. Nothing may
			// be made here, and a reap of the dir fails it (not skipped
			// as another reap's) until the other name is removed.
			if err := linkedMetaDB(kd, name); err != nil {
				return err
			}
			return &os.PathError{Op: "open", Path: name + "/" + db.FileName, Err: fmt.Errorf("removed since it was looked at, by the reap removing the dir: %w", unix.ENOENT)}
		}
		d, _, err = db.OpenSidecars(kd, o, write)
	}
	if err != nil {
		kd.Close()
		return nil, nil, 0, false, err
	}
	var history []db.HistoryEntry
	if err := d.View(func(tx *db.Tx) (err error) { history, err = tx.History(0); return err }); err != nil {
		d.Close()
		kd.Close()
		return nil, nil, 0, false, err
	}
	gen, landed = landedAfterReap(history)
	return kd, d, gen, landed, nil
}

// reapedStateSettled is reapedState (read-only) for a look that must not
// take a reap at work for one that was interrupted: a reap removes the
// dir's meta.db last, under the lock the read waits for, then the dir, so
// a first look that finds it gone looks again. gone reports that the
// second look found it gone too: nothing to report, as of a name removed
// since the listing. Otherwise what the last look found is returned, as
// reapedState returns it.
//
// A dir read under its meta.db's lock is still to be at name once read:
// a reap, or check --repair, that moves a dir a promotion landed in back
// to its key holds that lock until it has, and a look that opened the
// dir before then read the key's dir after, and reported an interrupted
// reap of a dir at its key. It is looked at again, as a name removed
// since the listing. (A move that cannot be told, its stat failing,
// leaves what was read standing.)
func (s *Store) reapedStateSettled(root *os.File, name string) (kd *os.File, d *db.DB, gen uint64, landed, gone bool, err error) {
	for missing := 0; ; {
		kd, d, gen, landed, err = s.reapedState(root, name, false)
		if err == nil {
			if moved, merr := fsat.Moved(root, name, kd); merr == nil && moved {
				// Moved back to its key (or away) once read: what was
				// read is no longer at the reap's name, as if removed
				// since.
				if d != nil {
					d.Close()
				}
				kd.Close()
				err = &os.PathError{Op: "look", Path: fsat.Join(root, name), Err: unix.ENOENT}
			}
		}
		if !fsat.IsNotExist(err) {
			return kd, d, gen, landed, false, err
		}
		if missing++; missing == 2 {
			return nil, nil, 0, false, true, err
		}
	}
}

// waitForReap waits until no reap is at work on the key dir that the
// reap-owned name under root was made for, each wait at most
// LockTimeout. A reap holds its key dir's turnstile from its lock until
// the dir is gone (db.Options.HoldTurnstile); the dir is at the key's name
// until the reap renames it to name, and at name from then on, so both
// are waited at, the key's first. A name with no dir, or a dir that
// cannot be flocked, is not waited for. Had or not, the caller looks
// again; it never writes.
func (s *Store) waitForReap(root *os.File, name string) {
	key, _ := ReapedKey(name)
	for _, at := range []string{key, name} {
		kd, err := fsat.OpenDirAt(root, at)
		if err != nil {
			continue
		}
		db.AwaitTurnstile(kd, s.opts.LockTimeout)
		kd.Close()
	}
}

// finishReaped finishes what an interrupted reap left: the reap-owned dir
// name is removed, or, if a promotion landed in it after the reap was
// killed (a writer that was waiting for the key's lock), renamed back to
// its key, never over anything at that name but an empty directory
// (ErrReapedKeyExists). It reports whether it restored the key; with
// dryRun it changes nothing and reports what it would do.
func (s *Store) finishReaped(root *os.File, name string, dryRun bool) (restored bool, err error) {
	key, _ := ReapedKey(name)
	if !dryRun {
		s.giveReapedBits(root, name)
	}
	// What the run gives itself (giveReapedBits) a dry run does not ask.
	dirGiven := dryRun && lacksOwnBits(root, name, true)
	kd, d, gen, landed, err := s.reapedState(root, name, !dryRun)
	if err != nil {
		return false, err
	}
	defer kd.Close()
	if d != nil {
		defer d.Close()
	}
	switch {
	case landed && dryRun:
		// The run opens the dir's meta.db as a writer first
		// (reapedState), then meets the key: a name taken by anything
		// but an empty directory fails it; then it renames the dir under
		// root.
		if err := allowed(kd); err != nil && !lacksOwnBits(kd, db.FileName, false) {
			return false, err
		}
		if err := linkedMetaDB(kd, name); err != nil {
			return false, err
		}
		if taken, err := keyNameTaken(root, key); err != nil || taken {
			if err == nil {
				err = fmt.Errorf("restore %s: gen %d: %w: look at both", name, gen, ErrReapedKeyExists)
			}
			return false, err
		}
		err := allowed(nil, root)
		return err == nil, err
	case landed:
		err := s.renameDirNoReplace(root, name, key)
		if errors.Is(err, unix.EEXIST) {
			// An empty dir at the key holds nothing to lose: a refused
			// first promotion's, or the mkdir of an earlier restore's
			// two-step rename, killed there. rename(2) replaces an empty
			// directory only, and fails on one filled meanwhile, or on
			// anything else at the name.
			err = s.disk.rename(root, name, key)
			if errors.Is(err, unix.EEXIST) || errors.Is(err, unix.ENOTEMPTY) || errors.Is(err, unix.ENOTDIR) {
				return false, fmt.Errorf("restore %s: gen %d: %w: look at both", name, gen, ErrReapedKeyExists)
			}
		}
		if err != nil {
			return false, err
		}
		return true, s.disk.syncDir(root)
	case dryRun:
		// What the removal below needs, in the order the run meets it:
		// the dir's meta.db, where it has one, opened as a writer
		// (reapedState), which one of more names fails; then what
		// removeAside refuses; then to write in kd and under root.
		if d != nil {
			if err := allowed(kd); err != nil && !lacksOwnBits(kd, db.FileName, false) {
				return false, err
			}
			if err := linkedMetaDB(kd, name); err != nil {
				return false, err
			}
		}
		if err := onlyTheStores(kd, name); err != nil {
			return false, err
		}
		if !dirGiven {
			if err := allowed(nil, kd); err != nil {
				return false, err
			}
		}
		if err := allowed(nil, root); err != nil {
			return false, err
		}
		return false, removable(root, kd, name, dirGiven)
	}
	return false, s.removeAside(root, kd, name, d)
}

// removable is the first refusal the removal of the dir kd, at name under
// root, would meet (fsat.DeleteErr): of one of its entries, in name order,
// then of the dir itself. Asked before anything is removed or renamed, it
// leaves whole a dir that holds an entry its runner may not remove (an
// immutable one, another user's in a sticky dir): removed in part, the
// key was gone and its reap-owned dir failed every reap after, for a
// refusal no look had asked.
//
// given says that kd's mode is not to be asked: a dry run's, of a dir its
// run gives the owner's bits first (giveReapedBits).
func removable(root, kd *os.File, name string, given bool) error {
	entry := fsat.DeleteErr
	if given {
		entry = fsat.DeleteRefused
	}
	_, err := firstRefusal(root, kd, name, entry, fsat.DeleteErr)
	return err
}

// firstRefusal is the first refusal entry gives of one of kd's entries,
// in name order, then self's of kd itself at name under root; listed is
// false, with the error, when kd cannot be listed.
func firstRefusal(root, kd *os.File, name string, entry, self func(*os.File, string) error) (listed bool, err error) {
	names, err := fsat.ReadDirNames(kd)
	if err != nil {
		return false, err
	}
	for _, n := range sortedCopy(names) {
		if err := entry(kd, n); err != nil {
			return true, err
		}
	}
	return true, self(root, name)
}

// removalRefused is what refuses the removal of the reap-owned dir kd, at
// name under root, whoever asks and whatever the modes, which a reap
// that may write in both would meet all the same (fsat.DeleteRefused: an
// immutable or append-only entry or dir; another's entry in a sticky
// dir, for this process's user): check's word for a dir the next reap
// fails whole (removable), where a mode alone (a reap gives its own dir
// the write bit; another user may run it) says nothing.
func removalRefused(root, kd *os.File, name string) error {
	listed, err := firstRefusal(root, kd, name, fsat.DeleteRefused, fsat.DeleteRefused)
	if !listed {
		return nil // the reap's to say
	}
	return err
}

// lacksOwnBits reports whether dir's entry name ("." for dir itself) is
// one a reap gives the owner's write bit to, its runner's own, and lacks
// it: with isDir a directory (the reap-owned dir), else a regular file of
// one name (its meta.db). Anything else at the name keeps its mode: a
// regular file at a reap-owned name (no dir a reap made: failed, "not a
// real directory"), a directory at meta.db's (a foreign entry: the dir
// is failed, not removed), and a meta.db with a second name, whose chmod
// would change that other name's file. So does one that lacks what a
// look needs (a dir's read and search bits, a file's read bit): a dry
// run, which changes nothing, cannot look in it to plan, and fails it,
// so its run fails it too, as it finds it.
func lacksOwnBits(dir *os.File, name string, isDir bool) bool {
	var st unix.Stat_t
	var err error
	if name == "." {
		st, err = fsat.Fstat(dir)
	} else {
		st, err = fsat.LstatAt(dir, name)
	}
	look := uint32(0o400)
	if isDir {
		look = 0o500
	}
	switch {
	case err != nil, st.Uid != uint32(os.Geteuid()):
		return false
	case isDir && !fsat.IsDir(&st), !isDir && (!fsat.IsRegular(&st) || st.Nlink != 1):
		return false
	}
	return uint32(st.Mode)&look == look && uint32(st.Mode)&0o200 == 0
}

// giveReapedBits gives the reap-owned dir name under root, and its
// meta.db, where they are its runner's own, the owner's write bit their
// removal (or restore) needs and their mode lacks: to write in the dir,
// to open meta.db as a writer (through the durability seam, never
// through a link, made durable); only where they have what
// a look needs, as a dry run looks (see lacksOwnBits). A sessdb from
// before reap asked for them first renamed a key dir its owner had left
// 0500 aside and then could not empty it: the key gone, and every reap
// and check --repair after failed the dir (check judges no mode of a
// reap-owned dir), until an operator chmodded it. Bits are only added,
// to what a reap is about to remove, so no lock is needed; one that
// cannot be given (another user's dir, a file system that keeps its
// modes) is left, and the removal fails as it would have.
func (s *Store) giveReapedBits(root *os.File, name string) {
	uid := os.Geteuid()
	// What is given the bit is what the look found (AddOwnerBitsToOneAt):
	// a worker of the same user that swaps a regular file in at the
	// dir's name, or a second name of another file at meta.db's, between
	// the look and the give, has its entry left as it is.
	if lacksOwnBits(root, name, true) && s.fault(faults.ReapedBeforeGiveBits) == nil {
		fsat.AddOwnerBitsToOneAt(s.disk.disk(), root, name, 0o200, uid, true)
	}
	kd, err := fsat.OpenDirAt(root, name)
	if err != nil {
		return
	}
	defer kd.Close()
	if lacksOwnBits(kd, db.FileName, false) && s.fault(faults.ReapedBeforeGiveBits) == nil {
		fsat.AddOwnerBitsToOneAt(s.disk.disk(), kd, db.FileName, 0o200, uid, false)
	}
}

// onlyTheStores refuses the removal of the reap-owned dir kd (at name)
// when it holds an entry that is not the store's (ErrForeignEntry), or
// when it cannot be listed.
func onlyTheStores(kd *os.File, name string) error {
	foreign, err := foreignEntries(kd)
	if err != nil || len(foreign) == 0 {
		return err
	}
	return refuseForeign("remove "+name+":", foreign)
}

// keyNameTaken reports whether a restore of a reap-owned dir to key would
// be refused (ErrReapedKeyExists): something is at the name, and it is not
// an empty directory (a link to one is taken: rename(2) of a directory
// over it fails).
func keyNameTaken(root *os.File, key string) (bool, error) {
	st, err := fsat.LstatAt(root, key)
	switch {
	case fsat.IsNotExist(err):
		return false, nil
	case err != nil:
		return false, err
	case !fsat.IsDir(&st):
		return true, nil
	}
	kd, err := fsat.OpenDirAt(root, key)
	if err != nil {
		if fsat.IsNotExist(err) || errors.Is(err, unix.EACCES) {
			// A dir its runner may not read (0000, another user's) is
			// renamed over all the same when it is empty, which only
			// the rename finds out: not taken, as far as a look knows.
			return false, nil
		}
		return false, err
	}
	defer kd.Close()
	names, err := fsat.ReadDirNames(kd)
	if err != nil {
		return false, err
	}
	return len(names) > 0, nil
}

// linkedMetaDB is the error of the reap-owned dir kd (at name) whose
// meta.db is a regular file with another name (a hard link): a writer's
// open gives such a file one of its own before it writes (db: ownFile),
// and nothing may be made in a dir a reap moved aside (reapedLook's
// BeforeWrite), so every reap and check --repair fails the dir until the
// other name is removed, whatever the file's mode and whoever runs them.
// nil for any other meta.db, or none.
func linkedMetaDB(kd *os.File, name string) error {
	st, err := fsat.LstatAt(kd, db.FileName)
	if err != nil || !fsat.IsRegular(&st) || st.Nlink < 2 {
		return nil
	}
	return &os.PathError{Op: "open", Path: name + "/" + db.FileName, Err: fmt.Errorf("it has %d names (a hard link): a writer gives such a meta.db a file of its own first, which nothing may make in a dir a reap moved aside; remove its other name, and the next reap finishes the dir", st.Nlink)}
}
