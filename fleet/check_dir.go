package fleet

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/fleet/etcdmeta"
	"sessdb/fleet/internal/sharedfs"
	"sessdb/fleet/shared"
	"sessdb/internal/fsat"
	"sessdb/store"
)

// dir checks what the transcripts dir holds under name: a key's
// directory and its files, or a name that is no key. own is the file the
// key's record names, already checked; it is the key's record as the walk
// read it (ok: it has one), hist its history read with it.
func (c *checker) dir(name, own string, it etcdmeta.Item, hist history, ok bool, add addFunc) error {
	if name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
		// No entry of the dir has such a name: it is a record's, foreign
		// input, and looked up it would reach outside the dir.
		return nil
	}
	if _, listed := slices.BinarySearch(c.inDir, name); !etcdmeta.ValidKey(name) && !listed {
		// A record's name that is no key, and that no entry of the dir
		// had when it was listed: foreign input, reported from etcd. Its
		// lookup could fail on the name alone (longer than a file name
		// may be: ENAMETOOLONG; bytes the file system refuses), which
		// was a problem, unreadable, on every check while it stayed.
		return nil
	}
	// Whatever fails below may be the dir itself (stale: the export went
	// away), which is no key's to report: the walk stops.
	root := func(err error) error {
		if err == nil {
			return nil
		}
		return shared.DirErr(c.b.dir)
	}
	st, err := fsat.LstatAt(c.root, name)
	if err := root(err); err != nil {
		return err
	}
	switch {
	case fsat.IsNotExist(err):
		return nil // a record whose key has no directory: its file was reported
	case err != nil:
		add(name, store.KindUnreadable, "%v", err)
		return nil
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		c.special(c.root, name, name, add)
		return nil
	case shared.IsMarkTemp(name) && fsat.IsRegular(&st):
		c.markTemp(name, &st, add)
		return nil
	case !etcdmeta.ValidKey(name) && fsat.IsDir(&st):
		// Not walked, as an odd directory in a key's directory is not
		// (a lost+found, a tree of any size on a file server): said, so
		// that a link below it is not taken for looked at. A sessions
		// root's check walks such a dir for links.
		add(name, store.KindNotAKey, "not a key dir (a key is 32 lowercase hex); sessdb leaves it alone and never looks inside it (a link below it is not reported)")
		return nil
	case !etcdmeta.ValidKey(name):
		add(name, store.KindNotAKey, "not a key dir (a key is 32 lowercase hex); sessdb leaves it alone")
		return nil
	case !fsat.IsDir(&st):
		add(name, store.KindNotADirectory, "a %s named as a key, not a directory (promote: fails)", fsat.Kind(&st))
		return nil
	}
	judgeAccess(c.root, add, c.owner, name, "key dir", &st, dirNeeds)
	c.b.at(hookCheckDir, name)
	// Workers promote and reap while check walks: a key dir or a file
	// gone since the listing (a reap removed an empty key dir; a temp
	// took its final name; a promotion that lost its compare removed its
	// file) is nothing to report, and over NFS it is ESTALE.
	kd, err := fsat.OpenDirAt(c.root, name)
	if err := root(err); err != nil {
		return err
	}
	switch {
	case gone(err):
		return nil
	case err != nil:
		add(name, store.KindUnreadable, "%v", err)
		return nil
	}
	defer kd.Close()
	files, err := sharedfs.ReadDirNames(kd)
	if err := root(err); err != nil {
		return err
	}
	switch {
	case gone(err):
		return nil
	case err != nil:
		add(name, store.KindUnreadable, "%v", err)
		return nil
	}
	c.b.at(hookCheckDirListed, name)
	slices.Sort(files)
	orphan := map[string]bool{}
	for _, o := range c.orphans[name] {
		orphan[o] = true
	}
	// An entry gone since the listing is another worker's doing, unless
	// the dir itself is gone: asked once, after the entries.
	goneSince := false
	for _, f := range files {
		path := name + "/" + f
		_, gen, isGen := shared.ParseName(path)
		_, isTemp := shared.ParseTemp(path)
		switch {
		case path == own:
			// Checked against its record; judged here for who may read it.
			if st, err := fsat.LstatAt(kd, f); err == nil && fsat.IsRegular(&st) {
				judgeAccess(c.root, add, c.owner, path, "generation", &st, genNeeds)
			}
		case !isGen && !isTemp && strings.HasPrefix(f, ".nfs"):
			// Harmless, and its client's: removed by sessdb, the file
			// would be gone for the process still reading it.
			add(path, store.KindUnknownEntry, "an NFS client's silly rename: a file removed while that client had it open (a generation reaped under a slow resolve); the client removes it when it closes the file, and sessdb never does. One that stays is still open, or its client died with it open: remove it once no client holds it")
		case !isGen && !isTemp:
			// Named as what it is: a link is one as at any other name
			// (a problem, never followed), a directory or a FIFO is no
			// file.
			st, err := fsat.LstatAt(kd, f)
			switch {
			case gone(err):
				goneSince = true
			case err == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK:
				goneSince = c.special(kd, f, path, add) || goneSince
			case err == nil && fsat.IsDir(&st):
				// Not walked: nothing of sessdb's reads, writes or
				// removes below it (a reap's rmdir of the key dir
				// fails while it is there), and a tree of any size
				// can sit there, on a file server every check reads
				// through. Said, so that what is below it (a link) is
				// not taken for looked at.
				add(path, store.KindUnknownEntry, "a directory the fleet does not write; sessdb leaves it alone and never looks inside it (a link below it is not reported); no reap removes the key's directory while it is there")
			case err == nil && !fsat.IsRegular(&st):
				add(path, store.KindUnknownEntry, "a %s the fleet does not write; sessdb leaves it alone", fsat.Kind(&st))
			default:
				add(path, store.KindUnknownEntry, "a file the fleet does not write; sessdb leaves it alone")
			}
		case orphan[path] && (isTemp || !needs(it, ok, path, time.Time{}, c.cut, time.Time{}, hist)):
			// Judged by the listing, and again by the record as read
			// now (as reap does before it sweeps): a promotion since may
			// need the file for the grace period. The in-flight window
			// needs no second look (a zero mtime; see stillOrphans).
			goneSince = c.orphan(path, gen, isTemp, it, ok, hist, kd, f, add) || goneSince
		default:
			// Not an orphan: needed, young, or not a regular file.
			goneSince = c.special(kd, f, path, add) || goneSince
		}
	}
	if goneSince {
		// Taken for gone, they may be the dir's: the walk stops, as it
		// does wherever else the dir is found gone.
		return shared.DirErr(c.b.dir)
	}
	return nil
}

// orphan reports an orphan, with why no record needs it (it, the key's
// record, ok: it has one; hist, its history as read with it) and its age;
// true if it was found gone. The date it names is the one needs judged it
// by: a generation below the record's, where the history was read with
// the record, goes by when it was superseded (superseded), which a busy
// key's record's own date is far later than, and one above it by the
// date back to which the key's history names no generation above the
// record's (unnamedSince), each said to be the history's only where an
// entry gave it; any other, by the
// record's. A file above the record's is named as what it can be: an
// earlier incarnation's where the history shows the key was above the
// record's generation before, a promotion that never committed either
// way.
func (c *checker) orphan(path string, gen uint64, temp bool, it etcdmeta.Item, ok bool, hist history, kd *os.File, file string, add addFunc) bool {
	age := "?"
	st, err := fsat.LstatAt(kd, file)
	switch {
	case gone(err):
		return true // swept since the listing, by another reaper or repair
	case err == nil:
		age = store.RoundAge(c.fileNow, fsat.ModTime(&st))
	}
	var why string
	switch {
	case temp:
		why = "a write that died (a temp)"
	case !ok && c.histories[strings.Split(path, "/")[0]]:
		// A history with no record (strayHistory): the record removed
		// alone, so this is most likely a generation it named.
		why = fmt.Sprintf("gen %d; the key has no record but a history (its record removed alone, with etcdctl or another tool: a generation it named, or a promotion that lost its commit or never made it); no resolve reads it", gen)
	case !ok:
		why = fmt.Sprintf("gen %d; the key has no record (a promotion that lost its commit or never made it, or a reaped key's)", gen)
	case it.Record.Transcript != nil:
		t := it.Record.Transcript
		promoted := store.RoundAge(c.now, time.Unix(0, t.PromotedAt))
		read := !hist.unread && hist.rev == it.Rev
		var at time.Time
		var dated bool
		var reached uint64
		switch {
		case gen < t.Gen && read:
			at, dated = superseded(hist.entries, gen, t)
		case gen > t.Gen && read:
			at, dated, reached = unnamedSince(hist.entries, t)
		}
		// What a file above the record's is: a generation of an earlier
		// incarnation of the key (its record removed, the key promoted
		// anew from no record) where the history shows one reached
		// above the record's, or a promotion that never committed.
		// A key moved in with a history above its record's
		// (Record.HistoryGen: migrate --to etcd) never began again from
		// no record: its history's generations above the record's are
		// the sessions root's, which no record here held.
		var above string
		switch {
		case gen <= t.Gen:
		case reached != 0 && it.Record.HistoryGen != 0:
			above = fmt.Sprintf("gen %d, above the record's: a promotion that lost its commit or died before it, or an earlier incarnation's whose history is gone (the key was moved in with a history that names gen %d, a generation its record never held here)", gen, reached)
		case reached != 0:
			above = fmt.Sprintf("gen %d, above the record's: an earlier incarnation's (the key's history reached gen %d before the key began again from no record), or a promotion that lost its commit or died before it", gen, reached)
		case read:
			above = fmt.Sprintf("gen %d, above the record's: a promotion that lost its commit or died before it, or an earlier incarnation's whose history is gone", gen)
		default:
			// The history read with the record failed (it does not
			// decode, or a newer sessdb's): needs took the record's date.
			above = fmt.Sprintf("gen %d, above the record's: a promotion that lost its commit or died before it, or an earlier incarnation's (the key's history could not be read to tell them apart: judged by the record's date)", gen)
		}
		switch {
		case gen < t.Gen && dated:
			why = fmt.Sprintf("gen %d, superseded %s ago (the key's history); the record names gen %d, promoted %s ago", gen, store.RoundAge(c.now, at), t.Gen, promoted)
		case gen < t.Gen && read:
			why = fmt.Sprintf("gen %d, superseded (no entry of the key's history dates it: judged by the record's date); the record names gen %d, promoted %s ago", gen, t.Gen, promoted)
		case gen < t.Gen:
			// The history read with the record failed (it does not
			// decode, or a newer sessdb's): needs took the record's date.
			why = fmt.Sprintf("gen %d, superseded (the key's history could not be read to date it: judged by the record's date); the record names gen %d, promoted %s ago", gen, t.Gen, promoted)
		case gen > t.Gen && dated:
			// What the history shows, not that no record named it since:
			// a key moved in (migrate --to etcd) after its record and
			// history were removed (etcdctl del) has the sessions root's
			// history, dated before the fleet's removed records, and
			// nothing in the record marks it moved in.
			why = fmt.Sprintf("%s; the key's history, back to %s ago, names no generation above the record's; the record names gen %d, promoted %s ago", above, store.RoundAge(c.now, at), t.Gen, promoted)
		case gen > t.Gen:
			why = fmt.Sprintf("%s; the record names gen %d, promoted %s ago", above, t.Gen, promoted)
		default:
			why = fmt.Sprintf("gen %d; the record names gen %d, promoted %s ago", gen, t.Gen, promoted)
		}
	default:
		why = fmt.Sprintf("gen %d; the record names no file", gen)
	}
	f := add(path, KindOrphan, "%s, %s old; no record needs it (reap removes it)", why, age)
	f.Severity = store.SeverityNotice
	return false
}

// markTemp reports the temp of a mark of the dir (shared.WriteMark) older
// than the grace period as an orphan, a notice as every orphan is, which
// Repair removes here (no key's: repair, which takes a key's lock, leaves
// it), and reap too (ListOrphans' MarkTemps): a crash cut the dir's first marking
// short. A younger one may be a marking under way, as a younger temp of a
// key's may be a write.
func (c *checker) markTemp(name string, st *unix.Stat_t, add addFunc) {
	if !fsat.ModTime(st).Before(c.cut) {
		return
	}
	f := add(name, KindOrphan, "the temp of a mark of the dir (%s) that a crash left (reap removes it)", shared.MarkName)
	f.Severity = store.SeverityNotice
	if c.o.Repair {
		c.removal(f, shared.RemoveMarkTemp(c.b.dir, name))
	}
}
