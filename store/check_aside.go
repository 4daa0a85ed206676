package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"sessdb/db"
	"sessdb/internal/faults"
	"sessdb/internal/fsat"
	"sessdb/internal/lockonly"
)

// Quarantine moves key's dir aside, whole, to a name under the root that
// is not a key (QuarantinePrefix, the key, the UTC time, never over an
// existing name), so that no resolve finds it, and returns that name. It
// takes the key's exclusive lock: meta.db's flock, taken on the file
// itself so that a damaged one is locked too, or, for a key without one,
// a meta.db made for the lock and removed again in the dir moved aside.
// Nothing in the dir is changed; sessdb never removes a quarantine dir.
//
// A promotion that opened the key dir before the move and was waiting for
// its lock fails once it has it: its dir is no longer at the key's name
// (Begin checks), and nothing is written in the dir moved aside.
func (s *Store) Quarantine(key string) (string, error) {
	if !ValidKey(key) {
		return "", fmt.Errorf("quarantine %q: %w", key, ErrInvalidKey)
	}
	root, err := s.openRoot()
	if err != nil {
		return "", err
	}
	defer root.Close()
	kd, err := fsat.OpenDirAt(root, key)
	if err != nil {
		return "", err
	}
	defer kd.Close()
	st, err := fsat.LstatAt(kd, db.FileName)
	if err == nil && fsat.IsRegular(&st) {
		f, lerr := s.lockFileAtName(kd)
		switch {
		case lerr != nil:
			return "", lerr
		case f != nil:
			defer f.Close()
		default:
			// Removed under its lock while this waited for it (migrate
			// --to-legacy, a lock-only meta.db's removal): a key without
			// one now.
			err = &os.PathError{Op: "lstat", Path: fsat.Join(kd, db.FileName), Err: unix.ENOENT}
		}
	}
	made := false
	switch {
	case fsat.IsNotExist(err):
		// Made for the lock only if this open made it, empty: another
		// process's promotion may make meta.db and commit into it between
		// the look above and the open, which then waits for and locks
		// that file, the key's record.
		before := lockonly.Look(kd)
		defer before.Close()
		d, sc, err := db.OpenSidecars(kd, s.writerOptions("quarantine", kd, key), true)
		if err != nil {
			return "", err
		}
		defer d.Close()
		made = before.MadeByOpen(kd, d, sc)
	case err != nil:
		return "", err
	}
	// A meta.db that is a link or a FIFO is no lock anyone can take: the
	// key is moved as it is.
	stamp := s.opts.Now().UTC().Format("20060102T150405Z")
	// Moved aside by another quarantine while this waited for the lock:
	// what is at the key's name now (a key made again) is not the dir
	// locked, and is not moved without its lock. Whoever moves a key dir
	// holds its lock, so the name checked now stays until the rename.
	// Not moved, the dir is left as it was found: the lock's meta.db goes
	// again, wherever the dir is now.
	unmoved := func(err error) (string, error) {
		if made {
			s.removeLockOnly(kd)
		}
		return "", err
	}
	if err := stillAtKey("quarantine", s.root, kd, key); err != nil {
		return unmoved(err)
	}
	aside, err := s.renameAside(root, key, func(n int) string {
		if n == 1 {
			return QuarantinePrefix + key + "-" + stamp
		}
		return fmt.Sprintf("%s%s-%s-%d", QuarantinePrefix, key, stamp, n)
	})
	if err != nil {
		return unmoved(fmt.Errorf("quarantine %s: %w", key, err))
	}
	if made {
		// The lock's meta.db goes again, in the dir moved aside (under the
		// name it is at now, so that what else is at the key's name is
		// never touched).
		if ad, err := movedDir(root, kd, aside); err == nil {
			s.removeLockOnly(ad)
			ad.Close()
		}
	}
	s.opts.Logger.Info().Str("key", key).Str("dir", aside).Msg("session_quarantined")
	return aside, nil
}

// lockAttempts bounds lockFileAtName's tries, as db's opens are bounded.
const lockAttempts = 3

// lockFileAtName opens kd's meta.db and takes the exclusive flock of the
// file itself, a damaged one too. A file no longer at the name once locked
// (a reap's or a repair's unlink, a quarantine's move, a writer giving a
// hard-linked meta.db a file of its own) locks nothing: it is let go, and
// a regular file at the name now is opened and locked instead, up to
// lockAttempts tries in all. Whether the name still leads to the file is
// judged on the locked descriptor (fsat.Moved), as db's opens judge it. A
// name gone once the lock is had (removed under it) is nil and no error:
// the key has no meta.db now.
func (s *Store) lockFileAtName(kd *os.File) (*os.File, error) {
	for attempt := 1; ; attempt++ {
		f, err := fsat.OpenAt(kd, db.FileName, unix.O_RDONLY, 0)
		if err != nil {
			return nil, err
		}
		if err := s.fault(faults.QuarantineBeforeLock); err != nil {
			f.Close()
			return nil, err
		}
		if err := db.LockExclusive(kd, f, s.opts.LockTimeout); err != nil {
			f.Close()
			return nil, err
		}
		moved, err := fsat.Moved(kd, db.FileName, f)
		if err == nil && !moved {
			return f, nil
		}
		f.Close()
		if err != nil {
			return nil, err
		}
		now, err := fsat.LstatAt(kd, db.FileName)
		if fsat.IsNotExist(err) {
			return nil, nil
		}
		if err != nil || !fsat.IsRegular(&now) || attempt == lockAttempts {
			return nil, &os.PathError{Op: "quarantine", Path: f.Name(), Err: errors.New("replaced while it was being locked")}
		}
	}
}

// quarantineFindings runs Quarantine for check --repair --quarantine: what
// was found goes with the key dir, and a finding of kind KindQuarantined
// says where (or why it did not).
func (s *Store) quarantineFindings(key string, found []Finding) []Finding {
	aside, err := s.Quarantine(key)
	for i := range found {
		f := &found[i]
		if err != nil {
			f.Repair, f.Remains = "left as is: the quarantine was not done", true
			continue
		}
		f.Repair, f.Repaired = "moved aside with the key dir to "+aside, true
	}
	f := Finding{Path: key, Key: key, Kind: KindQuarantined, Severity: SeverityNotice}
	if err != nil {
		f.Detail = "the operator's decision (check --quarantine): move the key dir aside"
		f.notRepaired(err)
		return append(found, f)
	}
	f.Path, f.Detail = aside, quarantineDetail(key)
	f.Repair, f.Repaired, f.Remains = "moved "+key+" here (check --quarantine)", true, true
	return append(found, f)
}

// quarantineDetail describes a quarantine dir of key.
func quarantineDetail(key string) string {
	return "key " + key + "'s dir, moved aside by check --quarantine: no resolve finds it (the key cold-starts as absent); look at it, then remove it or move it back by hand"
}

// isOwned reports whether name is a dir name of the store's own under the
// root: a reap-owned or a quarantine dir.
func isOwned(name string) bool {
	_, reaped := ReapedKey(name)
	_, quarantined := QuarantinedKey(name)
	return reaped || quarantined
}

// examineOwned reports a reap-owned dir (a killed reap's, to finish) or a
// quarantine dir (the operator's, left alone), under the key it carries.
// It changes nothing: a reap-owned dir's meta.db is read under its shared
// lock, to tell whether a promotion landed in it after the kill.
func (s *Store) examineOwned(root *os.File, name string, add addFunc) {
	if key, ok := QuarantinedKey(name); ok {
		add(name, KindQuarantined, "%s", quarantineDetail(key)).Key = key
		return
	}
	key, _ := ReapedKey(name)
	// Removed while it was read, it is a reap at work, no reap that was
	// interrupted: nothing to report.
	kd, d, gen, landed, gone, err := s.reapedStateSettled(root, name)
	if gone {
		return
	}
	var othersWhat string
	var othersUID uint32
	if kd != nil && err == nil {
		othersWhat, othersUID = othersUnwritable(kd)
	}
	var f *Finding
	switch {
	case errors.Is(err, fs.ErrPermission):
		// Another user's (root's reap of a key dir an older sessdb made
		// as root, killed): root's reap finishes it, and that user's
		// where it owns the sessions root; its owner has the bits a
		// chmod would give.
		if what, uid, ok := othersReaped(root, name); ok {
			f = add(name, KindReapInterrupted, "key %s's dir, renamed aside by a reap that was interrupted; no resolve finds it; its meta.db could not be read (%v): %s is uid %d's, not this user's (uid %d): %s; one run as this user fails it every time", key, err, what, uid, os.Geteuid(), whoseReapFinishes(root, uid))
			break
		}
		// Its runner may not read or enter it, or read its meta.db (a
		// chmod, or an older sessdb's 0500 dir made 0300 by hand): a
		// reap or repair, which must look in it and gives only the
		// write bit, fails it every time until the bits are back.
		f = add(name, KindReapInterrupted, "key %s's dir, renamed aside by a reap that was interrupted; no resolve finds it; its meta.db could not be read (%v), so every reap and check --repair fails it until its owner gives them back (chmod u+rwx on the dir, u+rw on its meta.db)", key, err)
	case err != nil:
		f = add(name, KindReapInterrupted, "key %s's dir, renamed aside by a reap that was interrupted; no resolve finds it; its meta.db could not be read (%v): the next reap or check --repair retries", key, err)
	case othersWhat != "":
		// Readable, but another user's that this one may not write (an
		// older sessdb's meta.db made as root under umask 022, 0644): a
		// reap and check --repair write in the dir and open its meta.db
		// to write, and give bits only to what is their runner's own.
		f = add(name, KindReapInterrupted, "key %s's dir, renamed aside by a reap that was interrupted; no resolve finds it; %s is uid %d's, not this user's (uid %d), and this user may not write it, as a reap and check --repair must to finish it: %s; one run as this user fails it every time", key, othersWhat, othersUID, os.Geteuid(), whoseReapFinishes(root, othersUID))
	case kd != nil && linkedMetaDB(kd, name) != nil:
		f = add(name, KindReapInterrupted, "key %s's dir, renamed aside by a reap that was interrupted; no resolve finds it; its meta.db has another name (a hard link), and a reap and check --repair, which open it to write, would first give it a file of its own, which nothing may make in a dir a reap moved aside: every reap and check --repair fails it until the other name is removed", key)
	case landed:
		const why = "key %s's dir, renamed aside by a reap that was interrupted, and a promotion (gen %d) landed in it since (a writer that waited for the lock), or the reap, on a full disk, recorded none of its own: "
		if taken, terr := keyNameTaken(root, key); terr == nil && taken {
			f = add(name, KindReapInterrupted, why+"the key exists again, so neither the next reap nor check --repair moves it back to %s: look at both", key, gen, key)
			break
		}
		f = add(name, KindReapInterrupted, why+"the next reap or check --repair moves it back to %s", key, gen, key)
	default:
		const why = "key %s's dir, renamed aside by a reap that was interrupted; no resolve finds it: "
		var foreign []string
		if kd != nil {
			foreign, _ = foreignEntries(kd) // unread: the reap's to say
		}
		if len(foreign) > 0 {
			f = add(name, KindReapInterrupted, why+"%s, not the store's, so neither the next reap nor check --repair removes it: look at it", key, strings.Join(foreign, ", "))
			break
		}
		if kd != nil {
			if rerr := removalRefused(root, kd, name); rerr != nil {
				f = add(name, KindReapInterrupted, why+"its removal is refused (%v), so neither the next reap nor check --repair removes it until that is cleared: look at it", key, rerr)
				break
			}
		}
		f = add(name, KindReapInterrupted, why+"the next reap or check --repair removes it", key)
	}
	f.Key = key
	if kd != nil {
		kd.Close()
	}
	if d != nil {
		d.Close()
	}
}

// othersReaped says which of the reap-owned dir name under root and its
// meta.db (what, "the dir" or "its meta.db") another user than this
// process's owns, and that user (ok), where a look can tell: the dir
// first, then its meta.db where the dir can be opened. One this process
// owns and may not read is its own to chmod (ok false).
func othersReaped(root *os.File, name string) (what string, uid uint32, ok bool) {
	euid := uint32(os.Geteuid())
	st, err := fsat.LstatAt(root, name)
	if err != nil {
		return "", 0, false
	}
	if st.Uid != euid {
		return "the dir", st.Uid, true
	}
	kd, err := fsat.OpenDirAt(root, name)
	if err != nil {
		return "", 0, false
	}
	defer kd.Close()
	if mst, err := fsat.LstatAt(kd, db.FileName); err == nil && mst.Uid != euid {
		return "its meta.db", mst.Uid, true
	}
	return "", 0, false
}

// whoseReapFinishes says whose reap finishes a reap-owned dir under root
// that uid owns, or whose meta.db uid owns, and this process may not
// read: root's always; uid's only where uid is root or owns the sessions
// root. sessdb walks a sessions root as its owner or root alone (a user
// that owns neither it nor root is refused, exit 2), and a reap of
// another's root could not write in it nor in the dir its runner owns.
func whoseReapFinishes(root *os.File, uid uint32) string {
	st, err := fsat.Fstat(root)
	if uid == 0 || (err == nil && st.Uid == uid) {
		return "a reap or check --repair run as that user, or root, finishes it"
	}
	if err != nil {
		return "a reap or check --repair run as root finishes it"
	}
	return fmt.Sprintf("a reap or check --repair run as root finishes it (not one run as uid %d, which may not walk a sessions root of uid %d's)", uid, st.Uid)
}

// othersUnwritable says which of the reap-owned dir kd and its meta.db
// (what: "the dir", "its meta.db"; "" for neither) another user than
// this process's owns (uid) and this process may not write: in the dir,
// to remove its entries; its meta.db, which a reap opens to write. A
// reap gives bits only to what its runner owns, so one run as this user
// fails it every time. Root, which may write either whatever its mode,
// never.
func othersUnwritable(kd *os.File) (what string, uid uint32) {
	euid := uint32(os.Geteuid())
	if euid == 0 {
		return "", 0
	}
	if st, err := fsat.Fstat(kd); err == nil && st.Uid != euid && fsat.AccessAt(kd, ".", unix.W_OK|unix.X_OK) != nil {
		return "the dir", st.Uid
	}
	if st, err := fsat.LstatAt(kd, db.FileName); err == nil && fsat.IsRegular(&st) && st.Uid != euid && fsat.AccessAt(kd, db.FileName, unix.W_OK) != nil {
		return "its meta.db", st.Uid
	}
	return "", 0
}
