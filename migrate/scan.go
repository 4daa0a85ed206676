package migrate

import (
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/db"
	"sessdb/internal/faults"
	"sessdb/internal/fsat"
	"sessdb/store"
	"sessdb/store/legacy"
)

// sidecarNames are the legacy sidecar files, in the order they are read,
// written and reported.
var sidecarNames = legacy.SidecarNames()

// storeTempPrefix starts the store's own promotion temps (store.tmpPrefix).
const storeTempPrefix = "." + legacy.TranscriptName + ".tmp-"

// keyScan is a listing of one key dir: which legacy entries are there, of
// what type, and the raw bytes of each sidecar small enough to be read. It
// decides nothing about values (readLegacy does, with the legacy rules).
type keyScan struct {
	dir        *os.File
	meta       bool // an entry named meta.db, of any type
	transcript *unix.Stat_t
	stats      map[string]unix.Stat_t // the legacy sidecars present
	raw        map[string][]byte      // their bytes, when regular and 1..4096 bytes
	full       map[string]bool        // legacy names (sidecars, temps, the lock) that are directories with entries
	lock       *unix.Stat_t
	lockAge    time.Duration
	lockSpan   string   // lockAge's size as the reports tell it (span)
	temps      []string // legacy .incoming temps
	storeTemps bool     // the store's promotion temps
	movedAside bool     // a meta.db check --repair moved aside (store.AsidePrefix)
	aside      string   // the first such name, in name order
}

// scanKey lists dir and lstats each legacy entry; now ages the legacy
// lock. A name that vanishes between the listing and its lstat is taken
// as absent: the plan is made from what is there under the lock.
func scanKey(dir *os.File, now time.Time) (*keyScan, error) {
	names, err := fsat.ReadDirNames(dir)
	if err != nil {
		return nil, err
	}
	k := &keyScan{dir: dir, stats: map[string]unix.Stat_t{}, raw: map[string][]byte{}, full: map[string]bool{}}
	for _, n := range names {
		var st *unix.Stat_t
		if scanLooksAt(n) {
			if st, err = lstatListed(dir, n); err != nil {
				return nil, err
			}
		}
		switch {
		case n == db.FileName:
			k.meta = true
		case n == legacy.TranscriptName:
			k.transcript = st
		case n == legacy.LockName:
			if st != nil {
				// The legacy worker aged its lock by lstat, so a dangling
				// link at the name ages like a file and never wedges a key.
				mtime := fsat.ModTime(st)
				k.lock, k.lockAge, k.lockSpan = st, now.Sub(mtime), span(now, mtime)
				if fsat.IsDir(st) {
					k.full[n] = !emptyDir(dir, n)
				}
			}
		case legacy.IsTemp(n):
			if st != nil && fsat.IsDir(st) && !emptyDir(dir, n) {
				k.full[n] = true // never removed, as at a sidecar's name
				continue
			}
			k.temps = append(k.temps, n)
		case strings.HasPrefix(n, storeTempPrefix):
			k.storeTemps = true
		case strings.HasPrefix(n, store.AsidePrefix):
			k.movedAside = true
			if k.aside == "" || n < k.aside {
				k.aside = n
			}
		case legacy.IsSidecar(n):
			if st == nil {
				continue
			}
			k.stats[n] = *st
			if fsat.IsDir(st) {
				k.full[n] = !emptyDir(dir, n)
			}
			// The legacy reader read no more than this and refused a
			// larger file; the bytes serve only to describe oddities.
			if fsat.IsRegular(st) && st.Size >= 1 && st.Size <= legacy.SidecarMaxBytes {
				if b, err := fsat.ReadSmallFile(dir, n, legacy.SidecarMaxBytes); err == nil {
					k.raw[n] = b
				}
			}
		}
	}
	sort.Strings(k.temps)
	return k, nil
}

// scanLooksAt reports whether scanKey looks at the entry name: the
// transcript, the lock, a legacy temp, a sidecar.
func scanLooksAt(n string) bool {
	return n == legacy.TranscriptName || n == legacy.LockName || legacy.IsTemp(n) || legacy.IsSidecar(n)
}

// lstatListed looks at a name the key dir's listing gave, without following
// it: nil for a name gone since the listing. Any other failure (an I/O
// error, the kernel out of memory) is the scan's error, never "absent":
// taken for absent, a legacy worker's lock would go unseen and the key be
// migrated under it, a sidecar's value be recorded as none and its file
// then removed, and a transcript be recorded as missing.
func lstatListed(dir *os.File, n string) (*unix.Stat_t, error) {
	if err := faults.At(faults.MigrateScanLstat); err != nil {
		return nil, &os.PathError{Op: "lstat", Path: fsat.Join(dir, n), Err: err}
	}
	st, err := fsat.LstatAt(dir, n)
	if fsat.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &st, nil
}

// present reports whether the listing found an entry of any type at a
// sidecar's name.
func (k *keyScan) present(name string) bool { _, ok := k.stats[name]; return ok }

// describe says what is at a sidecar's name, for an oddity's Found.
func (k *keyScan) describe(name string) string {
	st, ok := k.stats[name]
	switch {
	case !ok:
		return "absent"
	case !fsat.IsRegular(&st):
		return fsat.Kind(&st)
	case st.Size == 0:
		return "empty file"
	case st.Size > legacy.SidecarMaxBytes:
		return fmt.Sprintf("%d-byte file (over %d)", st.Size, legacy.SidecarMaxBytes)
	}
	if b, ok := k.raw[name]; ok {
		return quote(b)
	}
	return "unreadable file"
}

// freshLock reports a legacy lock young enough to belong to a live legacy
// promotion (the legacy worker's own test: age <= LOCK_STALE_MS, so a lock
// from the future is fresh too).
func (k *keyScan) freshLock() bool { return k.lock != nil && k.lockAge <= LockStale }

// legacyLeft reports whether any legacy entry that ToDB removes is still
// there. A directory with entries at a legacy name does not count: it held
// no value, and only its owner can say what its contents are, so it is
// never removed.
func (k *keyScan) legacyLeft() bool {
	for n := range k.stats {
		if !k.full[n] {
			return true
		}
	}
	return k.lock != nil && !k.full[legacy.LockName] || len(k.temps) > 0
}

// emptyDir reports whether name in dir is a directory with no entries.
func emptyDir(dir *os.File, name string) bool {
	d, err := fsat.OpenDirAt(dir, name)
	if err != nil {
		return false
	}
	defer d.Close()
	names, _ := d.Readdirnames(1)
	return len(names) == 0
}

// regularTranscript reports whether current.jsonl is a regular file.
func (k *keyScan) regularTranscript() bool {
	return k.transcript != nil && fsat.IsRegular(k.transcript)
}

// removable lists the legacy entries ToDB retires, sorted.
func (k *keyScan) removable() []string {
	var out []string
	for _, n := range sidecarNames {
		if k.present(n) && !k.full[n] {
			out = append(out, n)
		}
	}
	if k.lock != nil && !k.full[legacy.LockName] {
		out = append(out, legacy.LockName)
	}
	out = append(out, k.temps...)
	sort.Strings(out)
	return out
}

// span renders how far apart now and then are, as a Duration rounded to
// the second, or, more than 292 years apart (a lock dated 2446, which
// ext4 keeps, or any date on tmpfs), in whole days (store.RoundAge):
// there time.Sub clamps, a false size, and the clamp negated overflows.
func span(now, then time.Time) string {
	d := now.Sub(then)
	switch {
	case d != math.MaxInt64 && d != math.MinInt64:
		return d.Abs().Round(time.Second).String()
	case store.Ahead(now, then):
		return store.RoundAge(then, now)
	}
	return store.RoundAge(now, then)
}

// lockOddity describes a stale lock, which is removed with the rest.
func (k *keyScan) lockOddity() []Oddity {
	if k.lock == nil || k.full[legacy.LockName] {
		return nil
	}
	return []Oddity{{legacy.LockName, fmt.Sprintf("%s, %s old", fsat.Kind(k.lock), k.lockSpan), "a stale lock: removed (older than an hour, no live legacy promotion holds it)"}}
}

// leftoverOddities describes what ToDB removes or leaves besides the
// sidecars: a stale lock, temps, directories with entries.
func (k *keyScan) leftoverOddities() []Oddity {
	out := append(k.lockOddity(), k.tempOddities()...)
	full := append(sidecarNames[:len(sidecarNames):len(sidecarNames)], legacy.LockName)
	var temps []string
	for n := range k.full {
		if legacy.IsTemp(n) {
			temps = append(temps, n)
		}
	}
	sort.Strings(temps)
	for _, n := range append(full, temps...) {
		if k.full[n] {
			out = append(out, Oddity{n, "a directory with entries", "left in place (it held no value; meta.db overrides it)"})
		}
	}
	return out
}

// tempOddities describes the legacy temps, which ToDB removes: the legacy
// reader never read a temp, so none holds a value.
func (k *keyScan) tempOddities() []Oddity {
	var out []Oddity
	for _, n := range k.temps {
		out = append(out, Oddity{n, "a legacy promotion's temp", "removed (no value: the legacy reader never read it)"})
	}
	return out
}
