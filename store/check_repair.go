package store

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/db"
	"sessdb/internal/fsat"
)

// repair acts on the findings of one entry, in an order where each step
// leaves the next one a key it can lock: a damaged meta.db is moved aside
// first (nothing can lock it open), then a pending promotion is rolled
// forward, then stray temps are removed. It records on each finding what
// it did or why it did nothing.
func (s *Store) repair(root *os.File, name string, found []Finding) {
	var aside string
	var asideErr error
	for i := range found {
		switch found[i].Kind {
		case KindMetaDamaged, KindMetaPageInvalid, KindMetaCheckFailed, KindRecordUndecodable:
			if aside == "" && asideErr == nil {
				aside, asideErr = s.moveAside(root, name)
			}
			if asideErr != nil {
				found[i].Repair = "not repaired: " + asideErr.Error()
			} else {
				found[i].Repair, found[i].Repaired = "moved meta.db aside to "+aside+"; the key cold-starts until its next promotion", true
			}
		}
	}
	rolled := false
	for i := range found {
		f := &found[i]
		if f.Kind != KindPendingPromotion {
			continue
		}
		if aside != "" {
			f.Repair, f.Repaired = "dropped with the meta.db moved aside", true
			continue
		}
		if _, err := s.RollForward(name); err != nil {
			f.Repair = "not repaired: " + err.Error()
			continue
		}
		rolled, f.Repaired = true, true
		if f.tmpWhole {
			f.Repair = "rolled forward: the temp was renamed over current.jsonl and the record cleared; other promotion temps removed"
		} else {
			f.Repair = "cleared the pending record (its temp was gone or did not match); promotion temps removed"
		}
	}
	var temps []int
	for i := range found {
		if found[i].Kind == KindStrayTemp {
			temps = append(temps, i)
		}
	}
	if len(temps) > 0 {
		s.repairTemps(root, name, found, temps, rolled)
	}
	for i := range found {
		if f := &found[i]; f.Repair == "" && f.Severity == SeverityProblem {
			f.Repair = "left as is: " + advice(f.Kind)
		}
	}
}

func (s *Store) repairTemps(root *os.File, name string, found []Finding, temps []int, rolled bool) {
	removed := map[string]bool{}
	kd, err := fsat.OpenDirAt(root, name)
	if err == nil {
		var names []string
		names, err = s.sweepStaleTemps(kd, s.opts.Now().Add(-StaleTempAge), false)
		kd.Close()
		for _, n := range names {
			removed[name+"/"+n] = true
		}
	}
	for _, i := range temps {
		f := &found[i]
		switch {
		case removed[f.Path]:
			f.Repair, f.Repaired = "removed", true
		case rolled:
			f.Repair, f.Repaired = "removed by the roll-forward", true
		case err != nil:
			f.Repair = "not repaired: " + err.Error()
		case f.age <= StaleTempAge:
			f.Repair = "left as is: younger than an hour, it may be a promotion in flight; check again later"
		default:
			f.Repair = "left as is: gone or changed since it was found"
		}
	}
}

// advice is what an operator can do about a problem check does not repair.
func advice(k Kind) string {
	switch k {
	case KindMetaNewerSchema:
		return "a newer sessdb wrote it; run that version"
	case KindTranscriptMismatch:
		return "the next resolve cold-starts the key (transcript-replaced) and its next promotion replaces the transcript"
	case KindLink, KindNotRegular, KindNotADirectory:
		return "sessdb never follows or removes it; look at it and remove it by hand"
	case KindLocked:
		return "the key was busy; check again"
	case KindUnreadable:
		return "an I/O error; look at the disk"
	}
	return "no automatic repair"
}

// moveAside renames key's damaged meta.db to AsidePrefix<UTC time>, under
// the file's exclusive flock (the key's lock: a damaged file can still be
// locked, and every store open of it fails anyway). It never replaces an
// existing file and never deletes anything. The key then reads as having
// no meta.db, a clean cold start, until its next promotion creates one.
func (s *Store) moveAside(root *os.File, key string) (string, error) {
	kd, err := fsat.OpenDirAt(root, key)
	if err != nil {
		return "", err
	}
	defer kd.Close()
	f, err := fsat.OpenAt(kd, db.FileName, unix.O_RDONLY, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	st, err := fsat.Fstat(f)
	if err != nil {
		return "", err
	}
	if !fsat.IsRegular(&st) {
		return "", &os.PathError{Op: "move aside", Path: f.Name(), Err: errors.New("not a regular file")}
	}
	if err := s.flockExclusive(f); err != nil {
		return "", err
	}
	if now, err := fsat.LstatAt(kd, db.FileName); err != nil || now.Dev != st.Dev || now.Ino != st.Ino {
		return "", &os.PathError{Op: "move aside", Path: f.Name(), Err: errors.New("replaced while it was being locked")}
	}
	if err := s.fault(FaultRepairBeforeAside); err != nil {
		return "", err
	}
	base := AsidePrefix + s.opts.Now().UTC().Format("20060102T150405Z")
	for n := 1; ; n++ {
		aside := base
		if n > 1 {
			aside = fmt.Sprintf("%s-%d", base, n)
		}
		err := unix.Renameat2(int(kd.Fd()), db.FileName, int(kd.Fd()), aside, unix.RENAME_NOREPLACE)
		if err == unix.EEXIST && n < 100 {
			continue
		}
		if err == unix.EINVAL { // a filesystem without RENAME_NOREPLACE
			if _, lerr := fsat.LstatAt(kd, aside); fsat.IsNotExist(lerr) {
				err = unix.Renameat(int(kd.Fd()), db.FileName, int(kd.Fd()), aside)
			}
		}
		if err != nil {
			return "", &os.LinkError{Op: "rename", Old: f.Name(), New: fsat.Join(kd, aside), Err: err}
		}
		if err := s.fault(FaultRepairAfterAside); err != nil {
			return "", err
		}
		return aside, fsat.SyncDir(kd)
	}
}

// flockExclusive takes f's flock, polling until the lock timeout: flock has
// no timeout of its own.
func (s *Store) flockExclusive(f *os.File) error {
	timeout := s.opts.LockTimeout
	if timeout <= 0 {
		timeout = db.DefaultLockTimeout
	}
	deadline := time.Now().Add(timeout)
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case err == unix.EINTR:
			continue
		case err != unix.EWOULDBLOCK:
			return &os.PathError{Op: "flock", Path: f.Name(), Err: err}
		case time.Now().After(deadline):
			return &os.PathError{Op: "flock", Path: f.Name(), Err: db.ErrLockTimeout}
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// sweepStaleTemps removes kd's stray temp files (promotion temps and meta.db
// temps) last changed before cutoff, and returns their names; with dryRun
// it only lists them. Where there are any and a meta.db, it works under the
// key's exclusive lock (shared for a dry run) and spares the temp a pending
// record names: that one is a promotion's only copy until it is rolled
// forward. Without a meta.db there is no lock to take (creating one would
// change how the key resolves), and the age alone is the guard: a live
// temp is seconds old.
func (s *Store) sweepStaleTemps(kd *os.File, cutoff time.Time, dryRun bool) ([]string, error) {
	stale := func() ([]string, error) {
		names, err := fsat.ReadDirNames(kd)
		if err != nil {
			return nil, err
		}
		sort.Strings(names)
		var out []string
		for _, n := range names {
			if !strings.HasPrefix(n, tmpPrefix) && !strings.HasPrefix(n, db.TempPrefix) {
				continue
			}
			// Links and odd files are reported by check, never removed.
			if st, err := fsat.LstatAt(kd, n); err == nil && fsat.IsRegular(&st) && time.Unix(st.Mtim.Unix()).Before(cutoff) {
				out = append(out, n)
			}
		}
		return out, nil
	}
	// A first look without the lock: most keys have no temps, and a walk
	// over thousands of keys should not lock each of them for nothing.
	if names, err := stale(); err != nil || len(names) == 0 {
		return nil, err
	}
	var spare string
	if st, err := fsat.LstatAt(kd, db.FileName); err == nil && fsat.IsRegular(&st) {
		open := db.OpenWriter
		if dryRun {
			open = db.OpenReader
		}
		d, err := open(kd, fsat.Join(kd, db.FileName), db.Options{LockTimeout: s.opts.LockTimeout, Now: s.opts.Now})
		if err != nil {
			return nil, err
		}
		defer d.Close()
		var sc db.Sidecars
		if err := d.View(func(tx *db.Tx) (err error) { sc, err = tx.Sidecars(); return err }); err != nil {
			return nil, err
		}
		if sc.Pending != nil {
			spare = sc.Pending.Tmp
		}
	} else if err != nil && !fsat.IsNotExist(err) {
		return nil, err
	}
	names, err := stale()
	if err != nil {
		return nil, err
	}
	var out []string
	var errs []error
	for _, n := range names {
		if n == spare {
			continue
		}
		if !dryRun {
			if err := fsat.UnlinkAt(kd, n); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		out = append(out, n)
	}
	if len(out) > 0 && !dryRun {
		if err := fsat.SyncDir(kd); err != nil {
			errs = append(errs, err)
		}
	}
	return out, errors.Join(errs...)
}
