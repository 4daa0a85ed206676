package migrate

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/db"
	"sessdb/internal/durable"
	"sessdb/internal/fsat"
	"sessdb/store"
	"sessdb/store/legacy"
)

// tempGrace is how long a meta.db temp is left alone after its last
// write. This binary's creation flocks its temp from before the name
// exists until the name is gone (db's create), so the flock alone tells a
// creation in flight; the grace is for a sessdb from before that (a
// rolling upgrade), whose creation let go of the flock after its bbolt
// initialisation and then fsynced and linked the temp: a rival removing it
// then failed that creation (measured then: two migrations at once,
// TestTwoProcessesAtOnce, failed a key in 2 rounds of 3 without the
// grace). A fsync takes milliseconds, seconds on a stalled disk; a minute
// leaves a live temp alone and still lets the next run after a kill remove
// what it left.
const tempGrace = time.Minute

// sweepMetaTemps removes the meta.db temps (db.TempPrefix) in kd that no
// process is building, and returns their names. Such a temp is left by a
// run killed while db made meta.db (a second Ctrl-C, a SIGKILL): an
// interrupted run finishes every key it started, so its own temps never
// outlive it, and a later run sweeps what a kill left. It is called with
// the key's meta.db lock held. A temp changed within tempGrace, or whose
// flock is held, is a meta.db being made right now, and is left; so is a
// link or an odd file (check reports it), and one whose flock could not be
// asked. One whose name is gone once its flock was had (db.TakeTemp's
// ENOENT) was its creator's, linked into place or removed since the
// listing: neither removed here nor listed; one taken is removed with its
// flock held (db.TakeTemp says why). A temp that is a second name
// of meta.db (a creation killed between its link and its unlink) needs
// only the unlink. Errors leave the temp for the next run or check
// --repair. A dry run (remove false) only lists what would be removed.
func (m *migrator) sweepMetaTemps(kd *os.File, remove bool) []string {
	names, err := fsat.ReadDirNames(kd)
	if err != nil {
		return nil
	}
	sort.Strings(names)
	dbst, dberr := fsat.LstatAt(kd, db.FileName)
	var removed []string
	for _, n := range names {
		if !strings.HasPrefix(n, db.TempPrefix) {
			continue
		}
		st, err := fsat.LstatAt(kd, n)
		// The kernel stamps the mtime from the wall clock, whatever clock
		// Options.Now is; a creation's last write is its bbolt init.
		if err != nil || !fsat.IsRegular(&st) || time.Since(fsat.ModTime(&st)) < tempGrace {
			continue
		}
		secondName := dberr == nil && st.Dev == dbst.Dev && st.Ino == dbst.Ino
		var taken *os.File
		if !secondName {
			if taken, _ = db.TakeTemp(kd, n); taken == nil {
				continue // held, not told, or gone since the listing
			}
		}
		if !remove || m.disk.Remove(kd, n) == nil {
			removed = append(removed, n)
		}
		if taken != nil {
			fsat.CloseFlocked(taken) // only now that the name is gone (db.TakeTemp)
		}
	}
	if remove && len(removed) > 0 {
		m.disk.SyncDir(kd)
	}
	return removed
}

// SweepMetaTemps is the sweep of the meta.db temps in kd a killed run
// left (sweepMetaTemps: a minute old, no flock held), for another writer
// that holds kd's meta.db lock and makes meta.db there (the fleet's
// migrate --from etcd); its removals go through disk. remove false lists
// what would be removed.
func SweepMetaTemps(disk durable.FS, kd *os.File, remove bool) []string {
	m := &migrator{disk: disk}
	return m.sweepMetaTemps(kd, remove)
}

// PendingTempNotRegular is the error of a key dir kd whose meta.db
// records a promotion in flight (p) whose temp is there but is not a
// regular file (store.PendingTempNotRegular: no roll-forward renames it
// into place or removes it): a resolve gives up on it and serves the
// generation before it in place (else promotion-lost), and no migration
// out of meta.db can settle the key until it is removed by hand. It is
// nil otherwise; the roll-forward's own read says why a temp it could not
// look at failed. ToLegacy, and the fleet's ToEtcd and FromEtcd, fail
// such a key with it, in a dry run too.
func PendingTempNotRegular(kd *os.File, p *db.Pending) error {
	kind := store.PendingTempNotRegular(kd, p)
	if kind == "" {
		return nil
	}
	return &os.PathError{Op: "roll forward", Path: fsat.Join(kd, p.Tmp), Err: fmt.Errorf("the temp of the promotion meta.db records in flight (gen %d) is a %s, not a regular file: no roll-forward renames or removes it, so the promotion stays pending (a resolve serves the generation before it where that is in place, else promotion-lost); remove it by hand and run again", p.Gen, kind)}
}

// RollForwardBlocked is the error the roll-forward of p, a promotion in
// flight in kd whose temp is whole, meets where a directory is at
// current.jsonl: a file is not renamed over a directory (the store's
// check says to remove it by hand). A dry run, which rolls nothing
// forward, fails the key with it as the run does; nil otherwise.
func RollForwardBlocked(kd *os.File, p *db.Pending) error {
	if st, err := fsat.LstatAt(kd, legacy.TranscriptName); err != nil || !fsat.IsDir(&st) {
		return nil
	}
	return &os.LinkError{Op: "rename", Old: fsat.Join(kd, p.Tmp), New: fsat.Join(kd, legacy.TranscriptName), Err: unix.EISDIR}
}
