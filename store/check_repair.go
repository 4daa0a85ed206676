package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/access"
	"sessdb/internal/faults"
	"sessdb/internal/fsat"
)

// repair acts on the findings of one entry, on proof only, in an order
// that never loses a committed promotion: the owner's bits a mode lacks
// are given back first (repairModes), so that the key can be opened and
// written; then a pending promotion is rolled forward (store.RollForward,
// under the key's exclusive lock), so the transcript it committed is in
// place before anything else happens;
// then a meta.db shown to be damaged is moved aside (a deep check that did
// not complete shows nothing, and moves nothing), or, where its one fault
// is a history at the last sequence number, that history is numbered
// again in place, or where it is history entries that do not decode,
// those are removed in place, or where it is an invalid meta page whose other page
// describes the transcript in place, that page is written again by a
// commit (the record and stamps are the conversation's, and sound); then
// every temp that no
// promotion in flight needs is removed under the key's exclusive lock,
// whatever its age. It records on each finding what it did or why it did
// nothing, and reports whether it wrote or moved meta.db. ctx's end stops
// a roll-forward's read of its temp (the check's interrupt), nothing
// renamed or swept: that finding is then not repaired.
func (s *Store) repair(ctx context.Context, root *os.File, name string, found []Finding) (dbTouched bool) {
	repairModes(s.disk.disk(), root, name, found)
	for i := range found {
		if f := &found[i]; f.Kind == KindReapInterrupted {
			restored, err := s.finishReaped(root, name, false)
			switch {
			case fsat.IsNotExist(err):
				// A reap or another check --repair running at once
				// finished it first: not a repair that failed.
				f.Repair = "gone since it was found (finished by another reap or check --repair): nothing left to do"
			case err != nil:
				f.notRepaired(err)
			case restored:
				f.Repair, f.Repaired = "moved back to "+f.Key+": the key resolves again", true
			default:
				f.Repair, f.Repaired = "removed: the reap is finished", true
			}
		}
	}
	// A history at the last sequence number is numbered again in place,
	// the record and stamps kept, unless meta.db goes aside for other
	// damage anyway. An invalid meta page in a file otherwise sound is
	// written again by a commit where its valid page describes the
	// transcript in place (a promotion writes on such a file too), and
	// beside other damage goes aside with it. A deep check that did not
	// complete is no damage: it proves nothing, and moves nothing.
	damaged, invalidPage, other := false, false, false
	for _, f := range found {
		switch f.Kind {
		case KindMetaPageInvalid:
			invalidPage = true
		case KindMetaDamaged, KindMetaCheckFailed, KindRecordUndecodable:
			damaged = damaged || !f.historyFull && !f.historyDamaged && !f.unproven
			other = other || !f.unproven
		}
	}
	pageOnly := invalidPage && !other
	damaged = damaged || invalidPage && other
	// History entries that do not decode fail every writer's open, the
	// roll-forward's too: they go first, where nothing else is damaged.
	for i := range found {
		if f := &found[i]; f.historyDamaged && !damaged {
			dbTouched = s.dropDamagedHistory(root, name, found, f) || dbTouched
		}
	}
	for i := range found {
		f := &found[i]
		if f.Kind != KindPendingPromotion {
			continue
		}
		settled, after, err := s.rollForwardExamined(ctx, name, f.examinedDB)
		// Settled, it may have committed to meta.db before its error (at
		// the fsync after its sweep): the first deep verdict is then about
		// another file.
		dbTouched = dbTouched || settled
		if cerr := ctx.Err(); err != nil && cerr != nil && errors.Is(err, cerr) {
			f.notRepaired(fmt.Errorf("check interrupted (%w) as the roll-forward read its temp: nothing renamed or removed; run check --repair again", cerr))
			continue
		}
		if err != nil {
			f.notRepaired(err)
			continue
		}
		// What the look proved of meta.db holds for the file this roll-
		// forward left only if nothing else wrote it first.
		for j := range found {
			found[j].examinedDB = after
		}
		if !settled {
			// Nothing in flight under the lock: another check --repair
			// rolled it forward first, or a promotion settled it.
			f.Repair = "gone since it was found (rolled forward by another check --repair, or settled by a promotion): nothing left to roll forward"
			continue
		}
		if f.tmpNotRegular {
			f.Repair = "left as is: its temp is not a regular file, which no roll-forward renames or removes; remove it by hand (until then, and after, a resolve serves the generation before it where that is in place, else promotion-lost; the key's next promotion replaces the record)"
			continue
		}
		f.Repaired = true
		if f.tmpWhole {
			f.Repair = "rolled forward: the temp was renamed over current.jsonl and the record cleared; other promotion temps removed"
		} else {
			f.Repair = "removed its temp, which did not match its record; the record stays pending, so a resolve serves the generation before it where that is in place (else promotion-lost); promotion temps removed"
		}
	}
	var aside string
	var asideErr error
	for i := range found {
		f := &found[i]
		if f.Kind == KindMetaPageInvalid && pageOnly {
			healed, err := s.writeMetaPageAgain(ctx, root, name, f.examinedDB)
			dbTouched = dbTouched || healed
			switch {
			case errors.Is(err, errMetaPageWritten):
				f.Repair = "gone since it was found (meta.db changed since: a commit wrote the invalid meta page again): nothing left to do"
				continue
			case fsat.IsNotExist(err):
				f.Repair = "gone since it was found (moved aside by another check --repair, or removed with its key): nothing left to write"
				continue
			case ctx.Err() != nil && errors.Is(err, ctx.Err()):
				f.notRepaired(fmt.Errorf("check interrupted (%w) as it read the transcript the valid page must describe: nothing written; run check --repair again", ctx.Err()))
				continue
			case errors.Is(err, errMetaPageMisplaced):
				// A promotion's commit writes over the valid page as this
				// one would; the one after it writes the invalid page.
				f.Repair = "left as is: " + err.Error() + ": a commit would write over the file's only valid page, not the invalid one, so none is made; the key resumes meanwhile, and its next two promotions write both pages"
				continue
			case err != nil:
				f.notRepaired(err)
				continue
			case healed:
				f.Repair, f.Repaired = "written again by a commit in place, as the key's next promotion would: its valid page describes the transcript in place; the record, stamps and history are kept, and the key resumes as before", true
				continue
			}
			// Its valid page does not describe the transcript in place:
			// no writer writes on it (ErrMetaFellBack); it goes aside.
			damaged = true
		}
		switch {
		case f.historyDamaged && !damaged:
			// Done before the roll-forward (dropDamagedHistory).
		case f.historyFull && !damaged:
			did, err := s.renumberHistory(root, name)
			dbTouched = dbTouched || did.Kept > 0
			switch {
			case err != nil:
				f.notRepaired(err)
			case did.Kept == 0:
				f.Repair = "left as is: its newest entry no longer holds the last sequence number (meta.db written since it was found)"
			default:
				f.Repair = "its history numbered again from 1, entries and order kept"
				if did.Dropped > 0 {
					f.Repair = fmt.Sprintf("its newest %d entries numbered again from 1, in their order, and %s (the ring keeps %d, as the next write's trim would have)", did.Kept, olderDropped(did.Dropped), db.HistoryLimit)
				}
				f.Repair, f.Repaired = f.Repair+"; the record and stamps are kept: the key resumes as before and takes writes again", true
			}
		case f.Kind == KindMetaCheckFailed && f.unproven:
			f.Repair = "left as is: a check that did not complete proves nothing, and nothing is moved without proof; check again (give it more time if it timed out)"
		case f.Kind == KindMetaDamaged, f.Kind == KindMetaPageInvalid, f.Kind == KindMetaCheckFailed, f.Kind == KindRecordUndecodable:
			if aside == "" && asideErr == nil {
				aside, asideErr = s.moveAside(root, name, f.examinedDB)
				dbTouched = dbTouched || asideErr == nil
			}
			switch {
			case fsat.IsNotExist(asideErr):
				// Another check --repair running at once moved it aside
				// first, or a reap took the key: not a repair that failed.
				f.Repair = "gone since it was found (moved aside by another check --repair, or removed with its key): nothing left to move"
			case asideErr != nil:
				f.notRepaired(asideErr)
			default:
				f.Repair, f.Repaired = "moved meta.db aside to "+aside+"; the key cold-starts until its next promotion", true
			}
		}
	}
	// A transcript held against the record that went aside is held
	// against none now: what a resolve says of it is meta.db's rung, but
	// where a rung before it (the transcript's own) decides first.
	if aside != "" && asideErr == nil {
		for i := range found {
			if f := &found[i]; f.Kind == KindTranscriptMismatch {
				f.resolves = afterAside(f.resolves)
			}
		}
	}
	var temps []int
	for i := range found {
		if found[i].Kind == KindStrayTemp {
			temps = append(temps, i)
		}
	}
	if len(temps) > 0 {
		s.repairTemps(root, name, found, temps)
	}
	for i := range found {
		if f := &found[i]; f.Repair == "" && f.Severity == SeverityProblem {
			f.Repair = "left as is: " + advice(f)
		}
	}
	return dbTouched
}

// repairTemps removes the key's temps (removeTemps) and says on each
// stray-temp finding what became of it.
func (s *Store) repairTemps(root *os.File, name string, found []Finding, temps []int) {
	var res tempRemoval
	kd, err := fsat.OpenDirAt(root, name)
	if err == nil {
		res, err = s.removeTemps(kd, name)
		kd.Close()
	}
	for _, i := range temps {
		f := &found[i]
		n := strings.TrimPrefix(f.Path, name+"/")
		switch {
		case res.removed[n] && res.syncErr != nil:
			// Unlinked, but the dir's fsync failed: a power cut may
			// bring it back, as a reap's sweep so is a fault.
			f.notRepaired(fmt.Errorf("removed, but not durably (a power cut may bring it back): %w", res.syncErr))
		case res.removed[n]:
			f.Repair, f.Repaired = "removed", true
		case res.kept[n] != "":
			f.Repair = "left as is: " + res.kept[n]
		case err != nil:
			f.notRepaired(err)
		default:
			// Gone before the lock was had: the roll-forward removed it,
			// or its promotion finished.
			f.Repair, f.Repaired = "removed by the roll-forward, or gone since it was found", true
		}
	}
}

// tempRemoval is what removeTemps did: the names it removed, and the
// names it left with why.
type tempRemoval struct {
	removed map[string]bool
	kept    map[string]string
	syncErr error // the fsync of the dir after the removals failed
}

// removeTemps removes every promotion temp and meta.db temp in kd, whatever
// its age, under the key's exclusive lock. Only a holder of that lock
// writes a promotion temp, so under it every promotion temp is debris but
// the one a pending record names while it is in flight (a promotion that
// crashed after committing since the roll-forward: it is kept for the next
// one). A key with no meta.db gets one for the lock, removed again before
// the lock is released, as reap does; nothing else about the key changes.
//
// A meta.db temp is made without the key's lock (it is how the lock's file
// comes to exist), so one may be live: its creator holds its flock from
// before its name exists (or, without O_TMPFILE, from just after) until
// the name is gone, so a temp db.TakeTemp finds held, or about to be, is
// left, and one whose name is gone once its flock was had was its
// creator's, gone since the listing, not removed here. A temp taken is
// removed with its flock held: a creator stalled between its create and
// its flock for longer than a second, taken for debris, finds its name
// gone once it has the flock and makes its temp again.
func (s *Store) removeTemps(kd *os.File, key string) (tempRemoval, error) {
	res := tempRemoval{removed: map[string]bool{}, kept: map[string]string{}}
	if names, err := tempNames(kd, nil); err != nil || len(names) == 0 {
		return res, err
	}
	_, err := fsat.LstatAt(kd, db.FileName)
	hadDB := err == nil
	if err != nil && !fsat.IsNotExist(err) {
		return res, err
	}
	d, sc, err := db.OpenSidecars(kd, s.writerOptions("remove temps", kd, key), true)
	if err != nil {
		return res, err
	}
	defer d.Close()
	// The file is ours to remove only if it is the empty one the open just
	// made: a promotion may have created and committed one since the look.
	if !hadDB && sc == (db.Sidecars{}) {
		// Runs before the Close above: the lock is held while the name goes.
		defer s.removeLockOnly(kd)
	}
	// Moved aside (check --repair --quarantine) while this waited for the
	// lock: nothing in the dir moved aside is to change.
	if err := stillAtKey("remove temps", s.root, kd, key); err != nil {
		return res, err
	}
	names, err := tempNames(kd, nil)
	if err != nil {
		return res, err
	}
	dbst, err := fsat.LstatAt(kd, db.FileName)
	if err != nil {
		return res, err
	}
	var errs []error
	for _, n := range names {
		if p := sc.Pending; p != nil && p.Tmp == n {
			res.kept[n] = "a promotion committed it since the roll-forward; the next check or promotion rolls it forward"
			continue
		}
		// A second name of meta.db itself is a creation that crashed between
		// its link and its unlink: the unlink is all that is left to do. (Its
		// flock is the one held here, so it cannot be asked.)
		st, err := fsat.LstatAt(kd, n)
		secondName := err == nil && st.Dev == dbst.Dev && st.Ino == dbst.Ino
		var taken *os.File
		if strings.HasPrefix(n, db.TempPrefix) && !secondName {
			taken, err = db.TakeTemp(kd, n)
			switch {
			case fsat.IsNotExist(err):
				// Gone since the listing: its creator linked it into
				// place, or removed it, and let go only then. Not this
				// repair's removal (fsat.Remove finds nothing and says
				// nothing).
				continue
			case taken == nil:
				// Held, or a file it cannot open (no descriptor left),
				// which may be held as much as one whose flock is taken:
				// it is left.
				res.kept[n] = "a meta.db being created right now"
				continue
			}
		}
		if err := s.removeTaken(kd, n, taken); err != nil {
			errs = append(errs, err)
			continue
		}
		res.removed[n] = true
	}
	if len(res.removed) > 0 {
		if res.syncErr = s.disk.syncDir(kd); res.syncErr != nil {
			errs = append(errs, res.syncErr)
		}
	}
	return res, errors.Join(errs...)
}

// removeTaken removes kd's entry name, and only then lets go of taken, the
// meta.db temp at that name as db.TakeTemp took it (nil: a temp not
// taken).
func (s *Store) removeTaken(kd *os.File, name string, taken *os.File) error {
	if taken != nil {
		defer fsat.CloseFlocked(taken)
	}
	return s.disk.remove(kd, name)
}

// refusedAs is err, a run's failed removal of name in dir, in the words
// its dry run gives (fsat.DeleteRefused) where both are a refusal (EPERM:
// an immutable or append-only entry or dir, the sticky rule): the kernel
// says only "operation not permitted", and the dry run why. Any other
// error is err as it is.
func refusedAs(dir *os.File, name string, err error) error {
	if !errors.Is(err, unix.EPERM) {
		return err
	}
	if why := fsat.DeleteRefused(dir, name); why != nil && errors.Is(why, unix.EPERM) {
		return why
	}
	return err
}

// removalAs is err, a dry run's refusal (fsat.DeleteErr) of the removal
// of name in dir, in the words its run's call (op: "remove", an unlink;
// "rmdir") gives: a refusal to write in or enter dir (its mode, an ACL, a
// read-only mount), which DeleteErr says as "access <dir>", is the run's
// "<op> <dir>/<name>", with the same cause. Any other error is err as it
// is.
func removalAs(dir *os.File, name, op string, err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) && pe.Op == "access" {
		return &os.PathError{Op: op, Path: fsat.Join(dir, name), Err: pe.Err}
	}
	return err
}

// tempNames lists kd's promotion temps and meta.db temps that are regular
// files last changed before cutoff (nil: any), sorted; links and odd
// files are reported by check, never removed. No time stands for "any":
// the zero time did, and a reap judging at 01:00 on the first day of
// year 1 (reap --dry-run --at) made it its cutoff, listing every temp,
// however young, as stale.
func tempNames(kd *os.File, cutoff *time.Time) ([]string, error) {
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
		st, err := fsat.LstatAt(kd, n)
		if err == nil && fsat.IsRegular(&st) && (cutoff == nil || fsat.ModTime(&st).Before(*cutoff)) {
			out = append(out, n)
		}
	}
	return out, nil
}

// afterAside is what a resolve says of a key once its meta.db went
// aside, given what it said before: absent, not-a-regular-file and
// too-large are the transcript's own rungs, before meta.db's; any later
// one is meta-moved-aside now.
func afterAside(before string) string {
	switch gates.Reason(before) {
	case gates.Absent, gates.NotARegularFile, gates.TooLarge:
		return before
	}
	return string(gates.MetaMovedAside)
}

// advice is what an operator can do about a problem check does not
// repair. For a transcript it names what a resolve says of the key, as
// the look that found it did (checkEntry gives it the look after the
// repair's).
func advice(f *Finding) string {
	switch f.Kind {
	case KindMetaNewerSchema:
		return "a newer sessdb wrote it; run that version"
	case KindTranscriptMismatch:
		switch f.resolves {
		case "":
			return "its next promotion replaces the transcript"
		case string(gates.Resumed):
			return "the next resolve resumes it as it is (resumed) and its next promotion replaces the transcript"
		}
		return "the next resolve cold-starts the key (" + f.resolves + ") and its next promotion replaces the transcript"
	case KindLink, KindNotRegular, KindNotADirectory:
		if f.keyFile {
			// This name is the key's own file: removing it by hand would
			// remove the key's record or transcript.
			return "this name is the key's own file, keep it: sessdb never writes through a hard link (a transcript is replaced, never modified, and the key's next write gives meta.db a file of its own), so the other name (a copy made with cp -al or rsync --link-dest) keeps what it holds"
		}
		return "sessdb never follows or removes it; look at it and remove it by hand"
	case KindLocked:
		return "the key was busy; check again"
	case KindUnreadable:
		return "an I/O error; look at the disk"
	case KindMode:
		return "give the owner the bits back (chmod u+rwx for a key dir, u+rw for a file), as the user that owns it or as root"
	case KindOwner:
		return access.OwnerAdvice
	}
	return "no automatic repair"
}

// moveAside renames key's damaged meta.db to AsidePrefix<UTC time>, under
// the file's exclusive flock (the key's lock: a damaged file can still be
// locked, and every store open of it fails anyway). It never replaces an
// existing file and never deletes anything. The key then reads as having
// no meta.db, a clean cold start, until its next promotion creates one.
//
// examined is the file as the look that proved it damaged saw it (nil:
// not known, or changed before the repair's roll-forward). A file that has
// changed since (a commit: some damage, a spare meta page, heals with the
// next one) is not the file that was proved damaged, and is left for the
// next check to judge.
func (s *Store) moveAside(root *os.File, key string, examined *unix.Stat_t) (string, error) {
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
	if err := db.LockExclusive(kd, f, s.opts.LockTimeout); err != nil {
		return "", err
	}
	if now, err := fsat.LstatAt(kd, db.FileName); fsat.IsNotExist(err) {
		return "", err // moved or removed while it was being locked
	} else if err != nil || now.Dev != st.Dev || now.Ino != st.Ino {
		return "", &os.PathError{Op: "move aside", Path: f.Name(), Err: errors.New("replaced while it was being locked")}
	}
	if err := stillAtKey("move aside", s.root, kd, key); err != nil {
		return "", err
	}
	if examined == nil || !unchangedSince(kd, examined) {
		return "", &os.PathError{Op: "move aside", Path: f.Name(), Err: errors.New("changed since it was found damaged (a commit since?): check again")}
	}
	if err := s.fault(faults.RepairBeforeAside); err != nil {
		return "", err
	}
	base := AsidePrefix + s.opts.Now().UTC().Format("20060102T150405Z")
	for n := 1; ; n++ {
		aside := base
		if n > 1 {
			aside = fmt.Sprintf("%s-%d", base, n)
		}
		err := s.disk.renameNoReplace(kd, db.FileName, aside)
		if errors.Is(err, unix.EEXIST) && n < 100 {
			continue
		}
		if err != nil {
			return "", err
		}
		if err := s.fault(faults.RepairAfterAside); err != nil {
			return "", err
		}
		return aside, s.disk.syncDir(kd)
	}
}

// writeMetaPageAgain writes key's invalid meta page again by a commit that
// changes nothing else (bbolt writes the meta of each commit to the page
// the last did not use: the invalid one), under the key's exclusive lock,
// where the valid page's record describes the transcript in place: the
// judgement of a promotion's writer, which writes on such a file
// (fellBack), and whose commit would write the page the same way. The
// record, stamps and history stay, and the key resumes as before; moved
// aside, they were lost, and the next job's cold run replaced the
// conversation. It reports false, with no error, where the valid page
// does not describe the transcript in place (the caller moves the file
// aside, as no writer writes on it) or both pages are valid by now (a
// commit since wrote the page), and an error where meta.db changed since
// the look that found the page (nothing is written without that look's
// proof, the deep check's included).
func (s *Store) writeMetaPageAgain(ctx context.Context, root *os.File, key string, examined *unix.Stat_t) (bool, error) {
	kd, d, sc, err := s.openInPlace(root, key, "write meta page", false)
	if err != nil {
		return false, err
	}
	defer kd.Close()
	defer d.Close()
	m := d.MetaPages()
	if m.Pages[0].Valid() && m.Pages[1].Valid() {
		return false, &os.PathError{Op: "write meta page", Path: d.Path(), Err: errMetaPageWritten}
	}
	if !sameFileAsExamined(kd, d, examined) {
		return false, &os.PathError{Op: "write meta page", Path: d.Path(), Err: errors.New("changed since its meta page was found invalid (a commit since?): check again")}
	}
	cur, err := currentBase(ctx, kd, sc)
	if err != nil {
		return false, err
	}
	if fell, err := fellBack(ctx, kd, m, cur); err != nil || fell {
		return false, err
	}
	// bbolt writes a commit's meta to page txid%2: the invalid page only
	// where the valid one sits at its own txid's page, as bbolt wrote it.
	// One copied to the other's place would be written over, the file's
	// only valid page, and the invalid one left.
	if v := m.Active; (m.Pages[v].Txid+1)%2 != uint64(1-v) {
		return false, &os.PathError{Op: "write meta page", Path: d.Path(), Err: fmt.Errorf("%w: meta page %d holds txid %d, which bbolt keeps on page %d", errMetaPageMisplaced, v, m.Pages[v].Txid, m.Pages[v].Txid%2)}
	}
	if err := d.Update(func(*db.Tx) error { return nil }); err != nil {
		return false, err
	}
	return true, nil
}

// errMetaPageWritten is a meta page found invalid that a commit since
// wrote again: nothing is left to do.
var errMetaPageWritten = errors.New("both meta pages valid: a commit since wrote the invalid one again")

// errMetaPageMisplaced is a valid meta page where bbolt's next commit
// writes: that commit would write over it, not the invalid page.
var errMetaPageMisplaced = errors.New("the valid meta page is where bbolt's next commit writes its meta")

// dropDamagedHistory removes key's history entries that do not decode,
// says on f what it did, and hands the file it left, as its proof, to the
// steps after it; it reports whether it wrote meta.db.
func (s *Store) dropDamagedHistory(root *os.File, key string, found []Finding, f *Finding) bool {
	dropped, renumbered, after, err := s.dropUndecodableHistory(root, key, f.examinedDB)
	switch {
	case fsat.IsNotExist(err):
		f.Repair = "gone since it was found (moved aside by another check --repair, or removed with its key): nothing left to remove"
	case err != nil:
		f.notRepaired(err)
	case len(dropped) == 0:
		f.Repair = "gone since it was found (meta.db written since: every history entry decodes, another check --repair removed them first): nothing left to remove"
	default:
		kept := "the others kept as they were"
		if renumbered.Kept > 0 {
			// Its newest entry held the last sequence number.
			kept = fmt.Sprintf("and the newest %d of the others numbered again from 1, in their order (the newest held the last sequence number)", renumbered.Kept)
			if renumbered.Dropped > 0 {
				kept += ", " + olderDropped(renumbered.Dropped)
			}
		}
		f.Repair, f.Repaired = fmt.Sprintf("its history entries that do not decode removed (%s), %s; the record and stamps are kept: the key resumes as before and takes writes again", strings.Join(dropped, ", "), kept), true
		for j := range found {
			found[j].examinedDB = after
		}
		return true
	}
	return false
}

// dropUndecodableHistory removes the history entries of key's meta.db
// that do not decode (db's DropUndecodableHistory), in one commit under
// the key's exclusive lock, and returns them. Each failed every read of
// the history, so every promotion, refusal and reap of the key
// (promote-failed), while the record and stamps decode and the key
// resumes: moved aside for it, the conversation went with them. The
// history is the audit of the key's writes, not its conversation; an
// entry that does not decode says nothing a reader could use.
//
// Where the history's newest entry holds the last sequence number (the
// look's read stopped at the damage before it could say so), the same
// commit numbers the history again (RenumberHistory), and returns what it
// did. It acts on the file the look examined (examined), unchanged since,
// and returns the file it left, for the steps after it to act on as
// proven.
func (s *Store) dropUndecodableHistory(root *os.File, key string, examined *unix.Stat_t) ([]string, db.Renumbered, *unix.Stat_t, error) {
	// The one writer that opens a file whose history a reader refuses:
	// its commit removes what the reader refuses.
	kd, d, _, err := s.openInPlace(root, key, "drop history", true)
	if err != nil {
		return nil, db.Renumbered{}, nil, err
	}
	defer kd.Close()
	defer d.Close()
	// A file changed since the look is not acted on; where every entry
	// decodes in it (another check --repair removed them first), there is
	// nothing left to do, which is no failed repair.
	same := sameFileAsExamined(kd, d, examined)
	var dropped []string
	var renumbered db.Renumbered
	err = d.Update(func(tx *db.Tx) (err error) {
		dropped, err = tx.DropUndecodableHistory()
		switch {
		case err != nil:
			return err
		case len(dropped) == 0:
			return errNothingDropped // rolled back: no commit, the file as it was
		case !same:
			return &os.PathError{Op: "drop history", Path: d.Path(), Err: errors.New("changed since its history was found damaged: check again")}
		}
		// A newest entry at the last sequence number, which the look's
		// read of the history never reached, is numbered again in the
		// same commit: else no write of the key follows it either.
		renumbered, err = tx.RenumberHistory()
		return err
	})
	switch {
	case errors.Is(err, errNothingDropped):
		return nil, db.Renumbered{}, nil, nil
	case err != nil:
		return nil, db.Renumbered{}, nil, err
	}
	after, err := fsat.LstatAt(kd, db.FileName)
	if err != nil {
		return dropped, renumbered, nil, nil // no proof handed on: the steps after it leave the file
	}
	return dropped, renumbered, &after, nil
}

// sameFileAsExamined reports whether d, a writer's open of kd's meta.db,
// holds the file a look examined, unchanged since: the file at the name
// as it was, or, where the open gave a hard-linked meta.db a file of its
// own (the same bytes), the file it copied.
func sameFileAsExamined(kd *os.File, d *db.DB, examined *unix.Stat_t) bool {
	if examined == nil {
		return false
	}
	if dev, ino, copied := d.CopiedFrom(); copied {
		return dev == uint64(examined.Dev) && ino == uint64(examined.Ino)
	}
	return unchangedSince(kd, examined)
}

var errNothingDropped = errors.New("no history entry to drop")

// openInPlace opens key's meta.db as a writer, under the key's exclusive
// lock, for a repair that commits to it in place (op names it in errors):
// a meta.db gone since the look is fs.ErrNotExist, never one the writer's
// open makes at the key's name, and a key dir moved from the key's name
// (check --repair --quarantine) while the open waited for the lock is
// refused, nothing in it changed. undecodableHistory is
// db.Options.UndecodableHistory. The caller closes kd and d.
func (s *Store) openInPlace(root *os.File, key, op string, undecodableHistory bool) (kd *os.File, d *db.DB, sc db.Sidecars, err error) {
	if kd, err = fsat.OpenDirAt(root, key); err != nil {
		return nil, nil, sc, err
	}
	if _, err = fsat.LstatAt(kd, db.FileName); err == nil {
		opts := s.writerOptions(op, kd, key)
		opts.UndecodableHistory = undecodableHistory
		if d, sc, err = db.OpenSidecars(kd, opts, true); err == nil {
			if err = stillAtKey(op, s.root, kd, key); err == nil {
				return kd, d, sc, nil
			}
			d.Close()
		}
	}
	kd.Close()
	return nil, nil, sc, err
}

// renumberHistory numbers key's history again from 1 where its newest
// entry holds the last sequence number (db's RenumberHistory: the ring's
// newest entries kept, any older dropped), in one commit under the key's
// exclusive lock, and reports what it did. The
// commit is bbolt's: a kill at any point leaves the file as it was or as
// repaired. A key with no meta.db (moved aside meanwhile) is left as is.
func (s *Store) renumberHistory(root *os.File, key string) (db.Renumbered, error) {
	kd, d, _, err := s.openInPlace(root, key, "renumber history", false)
	if err != nil {
		return db.Renumbered{}, err
	}
	defer kd.Close()
	defer d.Close()
	if err := s.fault(faults.RepairBeforeRenumber); err != nil {
		return db.Renumbered{}, err
	}
	var did db.Renumbered
	err = d.Update(func(tx *db.Tx) (err error) {
		did, err = tx.RenumberHistory()
		return err
	})
	if err != nil {
		return db.Renumbered{}, err
	}
	return did, s.fault(faults.RepairAfterRenumber)
}

// sweepStaleTemps removes kd's stray temp files (promotion temps and meta.db
// temps) last changed before cutoff, and returns their names; with dryRun
// it only lists them. Where there are any and a meta.db, it works under the
// key's exclusive lock (shared for a dry run) and spares the temp a pending
// record names: that one is a promotion's only copy until it is rolled
// forward. Without a meta.db there is no lock to take (creating one would
// change how the key resolves), and the age alone is the guard: a live
// temp is seconds old, and a promotion makes meta.db before its temp, so
// one that appears while the temps are listed leaves them all for the
// next sweep (a clock set back makes a live temp look old).
func (s *Store) sweepStaleTemps(kd *os.File, key string, cutoff time.Time, dryRun bool) ([]string, error) {
	// A first look without the lock: most keys have no temps, and a walk
	// over thousands of keys should not lock each of them for nothing.
	if names, err := tempNames(kd, &cutoff); err != nil || len(names) == 0 {
		return nil, err
	}
	var spare string
	noDB := false
	if st, err := fsat.LstatAt(kd, db.FileName); err == nil && fsat.IsRegular(&st) {
		d, sc, err := db.OpenSidecars(kd, s.writerOptions("sweep", kd, key), !dryRun)
		if err != nil {
			// The open stops before it writes in a dir moved aside while
			// it waited (a meta.db made again): that is the skip below,
			// not a fault.
			if stillAtKey("sweep", s.root, kd, key) != nil {
				return nil, nil
			}
			return nil, err
		}
		defer d.Close()
		// Moved aside (check --repair --quarantine) while this waited for
		// the lock: nothing in the dir moved aside is to change, and the
		// key has no temps left to sweep.
		if stillAtKey("sweep", s.root, kd, key) != nil {
			return nil, nil
		}
		if sc.Pending != nil {
			spare = sc.Pending.Tmp
		}
		// The run opened meta.db as a writer here, whatever it then
		// spares: a dry run fails where that open would.
		if dryRun {
			if err := allowed(kd); err != nil {
				return nil, err
			}
		}
	} else if err != nil && !fsat.IsNotExist(err) {
		return nil, err
	} else if noDB = err != nil; noDB {
		if err := s.fault(faults.SweepUnlockedBeforeList); err != nil {
			return nil, err
		}
	}
	names, err := tempNames(kd, &cutoff)
	if err != nil {
		return nil, err
	}
	// A meta.db made since the look is a writer's lock: a promotion that
	// makes it stages its temp after, so a temp just listed may be one it
	// has committed, the only copy of its generation, and old by its
	// mtime if the clock was set back in between. The temps wait for the
	// next sweep, under that lock.
	dbst, dberr := fsat.LstatAt(kd, db.FileName)
	if noDB && !fsat.IsNotExist(dberr) {
		return nil, dberr
	}
	var out []string
	var errs []error
	for _, n := range names {
		if n == spare {
			continue
		}
		// Its age says nothing of a meta.db temp whose flock is held: a
		// creation in flight, older by the clock than it is after the
		// clock jumped ahead, or stalled on its fsync, whose link would
		// fail. A second name of meta.db is a creation that crashed after
		// its link (its flock is the key's lock, held here). One whose
		// name is gone once its flock was had (db.TakeTemp's ENOENT)
		// was its creator's, linked into place or removed since the listing:
		// the lstat finds no second name, and it is not swept here. One
		// taken is removed with its flock held (db.TakeTemp says why).
		var taken *os.File
		if strings.HasPrefix(n, db.TempPrefix) {
			if taken, _ = db.TakeTemp(kd, n); taken == nil {
				if st, err := fsat.LstatAt(kd, n); dberr != nil || err != nil || st.Dev != dbst.Dev || st.Ino != dbst.Ino {
					continue
				}
			}
		}
		if dryRun {
			if taken != nil {
				fsat.CloseFlocked(taken)
			}
			// What the run's unlink meets (the key dir's mode, an
			// immutable or append-only temp or dir, the sticky rule):
			// that temp failed, the others swept, as the run's are.
			if err := fsat.DeleteErr(kd, n); err != nil {
				errs = append(errs, removalAs(kd, n, "remove", err))
				continue
			}
		} else if err := s.removeTaken(kd, n, taken); err != nil {
			errs = append(errs, refusedAs(kd, n, err))
			continue
		}
		out = append(out, n)
	}
	if len(out) > 0 && !dryRun {
		if err := s.disk.syncDir(kd); err != nil {
			errs = append(errs, err)
		}
	}
	return out, errors.Join(errs...)
}

// olderDropped says how many history entries older than the ring a
// renumber dropped, one in the singular ("the 1 older ones dropped" was
// the note of a 65-entry history).
func olderDropped(n int) string {
	if n == 1 {
		return "the older one dropped"
	}
	return fmt.Sprintf("the %d older ones dropped", n)
}
