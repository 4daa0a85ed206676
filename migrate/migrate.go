package migrate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/db"
	"sessdb/internal/callerctx"
	"sessdb/internal/durable"
	"sessdb/internal/fsat"
	"sessdb/internal/walk"
	"sessdb/store"
	"sessdb/store/legacy"
)

// DefaultLockTimeout is the wait for a key's meta.db lock when
// Options.LockTimeout is 0. It is longer than the store's default because a
// migration that gives up leaves work for a re-run, while waiting costs
// nothing once the workers are stopped.
const DefaultLockTimeout = 10 * time.Second

// LockStale is the legacy LOCK_STALE_MS: a legacy lock file at most this
// old (by its mtime) may belong to a live legacy promotion (check's
// legacy-leftover notice tells the two apart by the same age).
const LockStale = legacy.LockStale

// Options configure ToDB and ToLegacy. The zero value migrates for real,
// one key at a time, with the wall clock.
type Options struct {
	// DryRun reports what would be done and changes nothing: no file is
	// created, written, renamed, removed or touched, and no lock is held
	// longer than one read.
	DryRun bool
	// Workers is how many keys are migrated at once; 0 or less means 1.
	// Reports are delivered in key order whatever the count.
	Workers int
	// LockTimeout bounds each wait for a key's meta.db lock; 0 means
	// DefaultLockTimeout, never "forever".
	LockTimeout time.Duration
	// Now is the clock for the age of legacy lock files; nil means
	// time.Now.
	Now func() time.Time
	// Progress, when non-nil, is called after each report with the number
	// of entries done and the total.
	Progress func(done, total int)
	// disk makes the writes migrate makes itself in a key dir: the
	// legacy temps (create, fsync), the renames into place, the removals
	// (legacy files after ToDB's commit, meta.db after ToLegacy's
	// writes, the temps of a failed write), the transcript's mtime and
	// its fsync, and the directory fsyncs. nil means durable.Disk. Only
	// this package's tests set it, to a power-cut journal. The store's
	// roll-forward of a pending promotion goes through the store's own.
	disk durable.FS
}

// Action is what happened to one entry of the sessions root (in a dry
// run, what would happen).
type Action string

// The actions, as Report.Action and the text and JSON reports name them.
const (
	// Migrated is a key converted (in a dry run, that would be).
	Migrated Action = "migrate"
	// Already is a key with nothing left to convert; leftovers beside its
	// values may have been removed (Report.Removed names them).
	Already Action = "already"
	// Skipped is an entry that is not a key dir, or a key dir with nothing
	// to migrate; it is left alone.
	Skipped Action = "skip"
	// Locked is a key with a fresh legacy lock, or whose meta.db lock was
	// not had in time; it is untouched.
	Locked Action = "locked"
	// Failed is a key that met an error; Cause says which. The key is
	// consistent (each value held by the legacy files or by a committed
	// meta.db), and a re-run picks it up.
	Failed Action = "failed"
)

// Report is the outcome for one entry of the sessions root. It marshals as
// docs/json.md's migrate report (json.go): a Cause of "" is null, and an
// empty list is [].
type Report struct {
	// Key is the entry's name in the sessions root, a key or not.
	Key string `json:"key"`
	// Action is what was done (in a dry run, what would be).
	Action Action `json:"action"`
	// Cause says why an entry was skipped, locked, failed or already
	// converted, when that is not plain; "" otherwise.
	Cause string `json:"cause"`
	// Values are what meta.db holds after ToDB, or what the legacy files
	// say after ToLegacy; nil when nothing was converted.
	Values *Values `json:"values"`
	// Oddities are the values that were not plain, and how each is read.
	Oddities []Oddity `json:"oddities"`
	// Removed names the files removed (dry run: to be removed). Of a
	// Failed key, only those removed before it failed; a dry run's key
	// failed because the run may not write in its dir lists none.
	Removed []string `json:"removed"`
	// Written names the legacy files written (dry run: to be written).
	// Of a Failed key, only those renamed into place before it failed.
	Written []string `json:"written"`
}

// Summary counts a run's reports.
type Summary struct {
	// Direction is "to-db" or "to-legacy".
	Direction string `json:"direction"`
	// DryRun is Options.DryRun: the counts are of what would be done.
	DryRun bool `json:"dry_run"`
	// Entries is the number of reports delivered.
	Entries int `json:"entries"`
	// Keys is how many of the entries are named as keys.
	Keys int `json:"keys"`
	// Migrated counts the reports whose Action is Migrated.
	Migrated int `json:"migrated"`
	// Already counts the reports whose Action is Already.
	Already int `json:"already"`
	// Skipped counts the reports whose Action is Skipped.
	Skipped int `json:"skipped"`
	// Locked counts the reports whose Action is Locked.
	Locked int `json:"locked"`
	// Failed counts the reports whose Action is Failed.
	Failed int `json:"failed"`
	// Seconds is the run's wall time, listing included.
	Seconds float64 `json:"elapsed_seconds"`
	// Interrupted is set when the run's context ended it early: the
	// counts cover the entries done before.
	Interrupted bool `json:"interrupted"`
}

// Complete reports whether every key was converted or already was: no key
// was locked and none failed.
func (s Summary) Complete() bool { return s.Locked == 0 && s.Failed == 0 }

// count adds a report's action to its counter; anything unknown counts
// as failed, so that Complete never passes over it.
func (s *Summary) count(a Action) {
	switch a {
	case Migrated:
		s.Migrated++
	case Already:
		s.Already++
	case Skipped:
		s.Skipped++
	case Locked:
		s.Locked++
	default:
		s.Failed++
	}
}

// migrator carries one run's settings to the per-key functions.
type migrator struct {
	ctx     context.Context // the run's: its end stops a transcript's read
	root    string
	rootDir *os.File
	opts    Options
	st      *store.Store // for RollForward
	disk    durable.FS   // opts.disk, or durable.Disk
}

// now is Options.Now, or the wall clock.
func (m *migrator) now() time.Time {
	if m.opts.Now == nil {
		return time.Now()
	}
	return m.opts.Now()
}

// dbOptions are the options of every meta.db open of the run: the lock
// timeout, never zero (db would take it as its own, shorter default).
func (m *migrator) dbOptions() db.Options {
	t := m.opts.LockTimeout
	if t <= 0 {
		t = DefaultLockTimeout
	}
	return db.Options{LockTimeout: t, Now: m.opts.Now}
}

// writerOptions are dbOptions for a writer's open of kd, the root's entry
// name, that makes or changes nothing in kd once it is no longer at that
// name: the open may wait for the lock of a quarantine or a reap that
// moves the dir aside, and then made a meta.db there (or, at the first
// write, an older file's schema migration; a quarantine dir is left as
// it was moved). The error is a not-exist one: convert skips the key as vanished.
func (m *migrator) writerOptions(kd *os.File, name string) db.Options {
	o := m.dbOptions()
	o.BeforeWrite = func() error {
		moved, err := fsat.Moved(m.rootDir, name, kd)
		if moved {
			return &os.PathError{Op: "open", Path: fsat.Join(kd, db.FileName), Err: fmt.Errorf("the key dir was moved aside while this waited for its lock: %w", unix.ENOENT)}
		}
		return err // not known to be at its name: nothing is written
	}
	return o
}

// run lists the root, converts every entry with c on up to Workers
// goroutines, and hands the reports to visit in name order.
func run(ctx context.Context, root string, c conversion, opts Options, visit func(Report) error) (Summary, error) {
	ctx = callerctx.Of(ctx) // nil is context.Background()
	if visit == nil {
		visit = func(Report) error { return nil }
	}
	start := time.Now()
	sum := Summary{Direction: c.name, DryRun: opts.DryRun}
	m := &migrator{ctx: ctx, root: root, opts: opts, disk: opts.disk}
	if m.disk == nil {
		m.disk = durable.Disk{}
	}
	st, err := store.New(root, store.Options{LockTimeout: m.dbOptions().LockTimeout, Now: opts.Now})
	if err != nil {
		return sum, err
	}
	m.st = st
	rd, err := fsat.OpenDir(root)
	if err != nil {
		return sum, err
	}
	defer rd.Close()
	names, err := fsat.ReadDirNames(rd)
	if err != nil {
		return sum, err
	}
	m.rootDir = rd
	// Name order whatever the workers: docs/json.md promises it, and two
	// runs over one tree then print the same lines.
	sort.Strings(names)

	// The end of ctx starts no new key; the keys under way finish, so an
	// interrupt leaves no key half done and none of this run's temps, but
	// for a transcript's read, which ctx stops before anything is written
	// (a file's size is its owner's to choose: a sparse one can read as
	// terabytes of zeros). (A
	// kill does not wait, and every key survives that too: see the package
	// doc; the next run removes a meta.db temp a kill left.) A visit error
	// stops the walk.
	done, cut := 0, false
	type converted struct {
		r            Report
		cut, printed bool
	}
	_, err = walk.Ordered(ctx, len(names), opts.Workers, func(i int) converted {
		r, cut, printed := m.convert(c, names[i])
		return converted{r, cut, printed}
	}, func(v converted) error {
		if v.cut {
			// Stopped by ctx: the run is interrupted. One stopped before
			// anything was done to it, as a key never started, is not
			// delivered; one a roll-forward changed first is, failed.
			cut = true
			if !v.printed {
				return nil
			}
		}
		r := v.r
		sum.count(r.Action)
		sum.Entries++
		if store.ValidKey(r.Key) {
			sum.Keys++
		}
		err := visit(r)
		if done++; opts.Progress != nil {
			opts.Progress(done, len(names))
		}
		return err
	})
	if err == nil && cut {
		err = ctx.Err()
	}
	sum.Seconds = time.Since(start).Seconds()
	sum.Interrupted = err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err())
	return sum, err
}

// ToDB migrates every legacy key dir under root to meta.db (see the package
// documentation), calling visit with each entry's report in name order. An
// error is a fault of the whole run (root unreadable, or visit's error,
// which stops it); a key that fails is a report, and the run goes on. A
// nil visit is no callback: the run is the same, and the Summary alone
// tells what it did.
func ToDB(root string, opts Options, visit func(Report) error) (Summary, error) {
	return ToDBContext(context.Background(), root, opts, visit)
}

// ToDBContext is ToDB stopped by the end of ctx: no key is started after
// it, the keys under way finish (but a transcript being read for its
// checksum is abandoned between two chunks of a megabyte, and its key,
// left as it was, is not delivered), and it returns ctx's error with the
// summary of what was done, marked Interrupted. A nil ctx is
// context.Background(), as ToDB's; one whose Done is closed while its Err
// is nil (a caller's own type that breaks Go's contract) is cancelled.
func ToDBContext(ctx context.Context, root string, opts Options, visit func(Report) error) (Summary, error) {
	return run(ctx, root, toDB, opts, visit)
}

// ToLegacy writes every key dir with a meta.db under root back into the
// legacy file-per-sidecar layout and removes its meta.db (see the package
// documentation). Reports, errors, options and a nil visit are as for
// ToDB.
func ToLegacy(root string, opts Options, visit func(Report) error) (Summary, error) {
	return ToLegacyContext(context.Background(), root, opts, visit)
}

// ToLegacyContext is ToLegacy stopped by the end of ctx, as ToDBContext;
// the roll-forward of a pending promotion, which reads its temp whole, is
// abandoned as a transcript's read is, nothing renamed or swept, and a
// key whose roll-forward was done when the stop cut its plan is
// delivered failed, "nothing written, rolled forward only".
func ToLegacyContext(ctx context.Context, root string, opts Options, visit func(Report) error) (Summary, error) {
	return run(ctx, root, toLegacy, opts, visit)
}
