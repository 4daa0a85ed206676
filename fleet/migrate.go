package fleet

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/db"
	"sessdb/fleet/etcdmeta"
	"sessdb/fleet/internal/sharedfs"
	"sessdb/fleet/shared"
	"sessdb/internal/callerctx"
	"sessdb/internal/durable"
	"sessdb/internal/faults"
	"sessdb/internal/fsat"
	"sessdb/internal/lockonly"
	"sessdb/internal/walk"
	"sessdb/migrate"
	"sessdb/store"
)

// MigrateOptions configure ToEtcd and FromEtcd. The zero value migrates for
// real, one key at a time.
type MigrateOptions struct {
	// DryRun reports what would be done and changes nothing: no file,
	// no etcd key, no meta.db, no roll-forward.
	DryRun bool
	// Workers is how many keys are migrated at once; 0 or less means 1.
	// Reports are delivered in key order whatever the count.
	Workers int
	// LockTimeout bounds each wait for a key's meta.db lock; 0 means
	// migrate.DefaultLockTimeout, never "forever".
	LockTimeout time.Duration
	// Now is the clock of the meta.db files FromEtcd creates (their
	// creation time); nil means time.Now.
	Now func() time.Time
	// Progress, when non-nil, is called after each report with the number
	// of entries done and the total.
	Progress func(done, total int)
}

// MigrateReport is the outcome for one key, in package migrate's shape and
// JSON (docs/json.md's migrate.report). Values are the record as the
// destination holds it (will hold it, in a dry run; for a conflict, the
// source's). Written names what was written: ToEtcd's transcript, as the
// transcripts dir names it, and its etcd record key; FromEtcd's
// current.jsonl and meta.db (of a failed key, only what is in place:
// meta.db once its commit landed, current.jsonl once renamed). Removed names the temps a killed FromEtcd
// left in a key dir and this run swept (a dry run: would sweep): its
// promotion temps, and its meta.db temps once a minute old. Oddities say
// how a key was read where it was not plain (a promotion rolled forward, a
// transcript that does not match its record).
type MigrateReport = migrate.Report

// Conflict is the Action of a key whose destination holds another
// generation than the source's, one the source does not descend from:
// nothing is written, and Cause names both. Summary.Complete is false
// while any remain.
const Conflict migrate.Action = "conflict"

// MigrateSummary counts a run's reports as migrate.Summary does (Direction
// "to-etcd" or "from-etcd"), and its conflicts.
type MigrateSummary struct {
	migrate.Summary
	// Conflicts counts the reports whose Action is Conflict.
	Conflicts int `json:"conflicts"`
}

// Complete reports whether every key was migrated or already was: none
// locked, failed or in conflict.
func (s MigrateSummary) Complete() bool { return s.Summary.Complete() && s.Conflicts == 0 }

// ConflictRemedy says what settles a conflict of a migration between the
// sessions root root and this fleet, which no re-run does (the source and
// the destination each hold a conversation of the key): one side goes,
// the operator's choice, no worker running. The fleet's stays once the key
// dir is moved aside (check --quarantine, run without the fleet's
// settings, which a root beside them would refuse); the key dir's once the
// fleet's history and record of the key are removed, in that order, with
// etcdctl (the command lines check names for a record it leaves). KEY
// stands for each key in conflict.
func (b *Backend) ConflictRemedy(root string) string {
	const key = "KEY"
	return fmt.Sprintf("a conflict is two conversations for one key, and a re-run leaves it: with no worker running, keep the fleet's by moving the key dir aside (env -i PATH=\"$PATH\" sessdb check --repair --quarantine %s %s), or the key dir's by removing the fleet's history and record of the key, in this order (etcdctl del --prefix %s; etcdctl del %s), then run again (docs/fleet.md, \"Moving a sessions root into a fleet, and back\")",
		key, lastArg(root), etcdctlKey(b.meta.HistoryDir(key)), etcdctlKey(b.meta.RecordKey(key)))
}

func (s *MigrateSummary) count(r MigrateReport) {
	s.Entries++
	if store.ValidKey(r.Key) {
		s.Keys++
	}
	switch r.Action {
	case migrate.Migrated:
		s.Migrated++
	case migrate.Already:
		s.Already++
	case migrate.Skipped:
		s.Skipped++
	case migrate.Locked:
		s.Locked++
	case Conflict:
		s.Conflicts++
	default:
		s.Failed++ // anything unknown too, so that Complete never passes over it
	}
}

// migration carries one run's settings to the per-key functions.
type migration struct {
	b       *Backend
	opts    MigrateOptions
	root    string
	rootDir *os.File     // nil: FromEtcd's dry run on a root that does not exist
	st      *store.Store // on root, for RollForward

	mu   sync.Mutex
	lost error // the first etcd unavailability a key met, nil while none has
}

func (m *migration) dbOptions() db.Options {
	t := m.opts.LockTimeout
	if t <= 0 {
		t = migrate.DefaultLockTimeout
	}
	return db.Options{LockTimeout: t, Now: m.opts.Now}
}

// walk migrates n entries with one on up to Workers goroutines and hands
// the reports to visit in order. The end of ctx starts no new key, and
// ends the etcd requests and the copies of the keys under way (a request
// that gets no answer would otherwise hold the stop for the request
// timeout); their lock waits and meta.db commits finish. A key the end
// cut before anything was done to it (stopUnprinted) is not delivered, as
// a key never started; one that had changed something (a promotion in
// flight rolled forward, a create sent that may have landed:
// stopPrinted) is delivered as failed, saying what is in place. Either
// makes the run interrupted, and a re-run finishes either.
func (m *migration) walk(ctx context.Context, sum *MigrateSummary, n int, one func(int) (MigrateReport, keyEnd), visit func(MigrateReport) error) error {
	if visit == nil {
		visit = func(MigrateReport) error { return nil }
	}
	type migrated struct {
		r   MigrateReport
		end keyEnd
	}
	done, cut := 0, false
	_, err := walk.Ordered(ctx, n, m.opts.Workers, func(i int) migrated {
		r, end := one(i)
		return migrated{r, end}
	}, func(k migrated) error {
		if k.end != ran {
			cut = true
		}
		if k.end == stopUnprinted {
			return nil
		}
		sum.count(k.r)
		err := visit(k.r)
		if done++; m.opts.Progress != nil {
			m.opts.Progress(done, n)
		}
		return err
	})
	if err == nil && cut {
		err = ctx.Err()
	}
	return err
}

// keyEnd is how a key's migration ended, for walk.
type keyEnd int

const (
	ran           keyEnd = iota // whatever its report says, ctx's end aside
	stopPrinted                 // cut short by ctx's end, something done: its report says what is in place
	stopUnprinted               // cut short by ctx's end before anything was done: no report
)

// failEtcd is fail for an error of etcd's, the cause err and then more;
// the first err of unavailability is kept for notTried, unless it is of
// ctx's end (a request the stop cut short says nothing of etcd).
func (m *migration) failEtcd(ctx context.Context, r *MigrateReport, err error, more string) {
	fail(r, fmt.Errorf("%w%s", err, more))
	if errors.Is(err, etcdmeta.ErrUnavailable) && stopped(ctx, err) == nil {
		m.mu.Lock()
		if m.lost == nil {
			m.lost = err
		}
		m.mu.Unlock()
	}
}

// notTried is the error of a key whose etcd step is not tried because an
// earlier key found etcd unavailable, nil while none has. Every key left
// would otherwise wait out the request timeout in turn (hours for
// thousands); each is still reported, failed, so the stream and its
// summary stay whole, and a re-run picks them up.
func (m *migration) notTried() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lost == nil {
		return nil
	}
	return fmt.Errorf("not tried: an earlier key found %w", m.lost)
}

func (m *migration) finish(ctx context.Context, sum *MigrateSummary, start time.Time, err error) (MigrateSummary, error) {
	sum.Seconds = time.Since(start).Seconds()
	err = callersEnd(ctx, err)
	sum.Interrupted = err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err())
	return *sum, err
}

func newMigration(b *Backend, root string, opts MigrateOptions) (*migration, error) {
	if err := b.opened(); err != nil {
		return nil, err
	}
	// Before the store or the claim looks at either dir: the claim
	// would mark a root taken for the fleet's dir.
	if err := CheckPlaces(root, b.dir); err != nil {
		return nil, err
	}
	m := &migration{b: b, opts: opts, root: root}
	st, err := store.New(root, store.Options{LockTimeout: m.dbOptions().LockTimeout, Now: opts.Now})
	if err != nil {
		return nil, err
	}
	m.st = st
	return m, nil
}

// ToEtcd moves every key dir under root into the fleet b (see the
// migration doc above), calling visit with each entry's report in name
// order. An error is a fault of the whole run (root unreadable, or visit's
// error, which stops it); a key that fails is a report, and the run goes
// on (once a key found etcd unavailable, the keys after it fail at once,
// not tried). The end of ctx starts no new key, and ends the etcd
// requests, the roll-forwards' reads of a promotion's temp, the reads of
// a file for its size and CRC32C (checksum), the reads of the fleet's
// file for a key dir's bytes (descends: a stop there is no conflict)
// and the copies of the keys under way (their lock waits and meta.db
// commits finish): a
// key it stopped before its create was sent (FromEtcd: before its commit)
// is left as it was and not delivered, as a key never started (nor
// counted in the summary), unless its pending promotion was rolled
// forward first (FromEtcd: or its stray temps removed);
// that one, and one whose create it cut short (which may have landed),
// is delivered failed. ToEtcd then returns ctx's error with the summary
// so far, Interrupted. A nil
// visit is no callback: the summary alone tells what was done. A
// transcripts dir (b's) that is root, or inside it, or that holds it, is
// refused before anything is read or written: a *PlaceError (CheckPlaces).
func ToEtcd(ctx context.Context, root string, b *Backend, opts MigrateOptions, visit func(MigrateReport) error) (MigrateSummary, error) {
	ctx = callerctx.Of(ctx) // nil is context.Background()
	start := time.Now()
	sum := MigrateSummary{Summary: migrate.Summary{Direction: "to-etcd", DryRun: opts.DryRun}}
	m, err := newMigration(b, root, opts)
	if err != nil {
		return sum, err
	}
	// The transcripts go into the dir for this fleet's records to name.
	// ctx ended under the claim (its look at the fleet's ID in etcd) is
	// an interrupt, as under FromEtcd's listing.
	if err := b.claim(ctx, !opts.DryRun); err != nil {
		return m.finish(ctx, &sum, start, err)
	}
	rd, err := fsat.OpenDir(root)
	if err != nil {
		return sum, err
	}
	defer rd.Close()
	m.rootDir = rd
	names, err := fsat.ReadDirNames(rd)
	if err != nil {
		return sum, err
	}
	// Name order whatever the workers, as migrate reports.
	sort.Strings(names)
	err = m.walk(ctx, &sum, len(names), func(i int) (MigrateReport, keyEnd) { return m.toEtcd(ctx, names[i]) }, visit)
	return m.finish(ctx, &sum, start, err)
}

// FromEtcd writes every key of the fleet b into a key dir under root,
// which is made if need be once etcd has been listed (a run whose listing
// fails makes nothing) (see the migration doc above), calling visit
// with each key's report in key order. Errors, ctx, reports and a nil
// visit are as for ToEtcd; the listing of etcd is one snapshot, and each key is read again,
// with its history, when its turn comes. A dry run makes nothing: onto a
// root that does not exist it plans each key, and stops as the run does
// where this user may not make the root (the mkdir's error).
func FromEtcd(ctx context.Context, b *Backend, root string, opts MigrateOptions, visit func(MigrateReport) error) (MigrateSummary, error) {
	ctx = callerctx.Of(ctx) // nil is context.Background()
	start := time.Now()
	sum := MigrateSummary{Summary: migrate.Summary{Direction: "from-etcd", DryRun: opts.DryRun}}
	m, err := newMigration(b, root, opts)
	if err != nil {
		return sum, err
	}
	// The records' files are looked for in the dir: it must be this
	// fleet's (compared, never marked: a migration out writes none).
	if err := b.claim(ctx, false); err != nil {
		return m.finish(ctx, &sum, start, err)
	}
	// The listing first: a run that lists nothing (ctx ended, etcd not
	// answering) makes no sessions root. Of each record only its key and
	// whether it could be read are kept: each key is read again, with its
	// history, at its turn (fromEtcd), and the records' other fields,
	// which another binary or a hand may have made as large as etcd
	// takes, would be held for the whole walk.
	var items []etcdmeta.Item
	if err := b.meta.List(ctx, func(it etcdmeta.Item) error {
		items = append(items, etcdmeta.Item{Key: it.Key, Err: it.Err})
		return nil
	}); err != nil {
		// ctx ended under the listing is an interrupt, as between keys:
		// the CLI exits 130 on it, not 1.
		return m.finish(ctx, &sum, start, err)
	}
	if !opts.DryRun {
		// Each dir made is made durable before anything is made in it,
		// or a power cut could take the root, and every key reported
		// migrated into it, away.
		made, err := durable.MkdirAll(sharedfs.FS(), root)
		if err != nil {
			return sum, err
		}
		// A root found there may be another writer's, made just now and
		// its name not yet fsynced into its parent (a host's first
		// promotion, descheduled between the two): the keys this run
		// reports migrated must not wait on that fsync. Once a run.
		if !made {
			if err := durable.SyncParent(sharedfs.FS(), root); err != nil {
				return sum, err
			}
		}
	}
	rd, err := fsat.OpenDir(root)
	switch {
	case err == nil:
		defer rd.Close()
		m.rootDir = rd
	case !opts.DryRun || !fsat.IsNotExist(err):
		return sum, err
	default:
		// The run makes the root, and its missing parents, before any
		// key: where this user may not, it stops there, nothing written.
		// So does the plan.
		if err := mayMakeDirAll(root); err != nil {
			return sum, err
		}
	}
	err = m.walk(ctx, &sum, len(items), func(i int) (MigrateReport, keyEnd) { return m.fromEtcd(ctx, items[i]) }, visit)
	return m.finish(ctx, &sum, start, err)
}

// mayMakeDirAll is the error a MkdirAll of path, which does not exist,
// would meet, found without making anything: its nearest part that
// exists (followed, as MkdirAll follows it) must be a directory this
// process may make entries in, asked as the mkdir would be judged
// (fsat.AccessAt: the mode, an ACL, a read-only mount). The error names
// the first dir that could not be made, as the mkdir's would.
func mayMakeDirAll(path string) error {
	p, child := filepath.Clean(path), ""
	for {
		st, err := os.Stat(p)
		switch {
		case err == nil && !st.IsDir():
			return &os.PathError{Op: "mkdir", Path: child, Err: unix.ENOTDIR}
		case err == nil:
			d, err := fsat.OpenDirUnread(p)
			if err != nil {
				return err
			}
			defer d.Close()
			if err := fsat.AccessAt(d, ".", unix.W_OK|unix.X_OK); err != nil {
				var pe *os.PathError
				if errors.As(err, &pe) {
					err = pe.Err
				}
				return &os.PathError{Op: "mkdir", Path: child, Err: err}
			}
			return nil
		case !errors.Is(err, fs.ErrNotExist):
			return err
		}
		parent := filepath.Dir(p)
		if parent == p {
			return nil
		}
		p, child = parent, p
	}
}

// fail turns r's Action to Failed with err as the Cause; the first error
// wins, and a nil err changes nothing.
func fail(r *MigrateReport, err error) {
	if err != nil && r.Action != migrate.Failed {
		r.Action, r.Cause = migrate.Failed, err.Error()
	}
}

func odd(r *MigrateReport, file, found, readAs string) {
	r.Oddities = append(r.Oddities, migrate.Oddity{File: file, Found: found, ReadAs: readAs})
}

// openLocked opens kd's meta.db as db.OpenSidecars does, and then checks,
// under the lock, that kd is still the root's entry name: check
// --quarantine and a reap move a key dir aside under that lock, and a
// quarantine promises that nothing in the dir moved aside changes. Such a
// dir is errMovedAside, a meta.db this open made there for its lock taken
// away again.
func (m *migration) openLocked(kd *os.File, name string, write bool) (*db.DB, db.Sidecars, error) {
	before := lockonly.Look(kd)
	defer before.Close()
	opts := m.dbOptions()
	// Nor does its open make anything there, a meta.db it would make,
	// nor its first write change an older file's schema there.
	opts.BeforeWrite = func() error {
		moved, err := fsat.Moved(m.rootDir, name, kd)
		if moved {
			return errMovedAside
		}
		return err // not known to be at its name: nothing is written
	}
	d, sc, err := db.OpenSidecars(kd, opts, write)
	if err != nil {
		return d, sc, err
	}
	moved, merr := fsat.Moved(m.rootDir, name, kd)
	if !moved && merr == nil {
		return d, sc, nil
	}
	// Moved aside, or not known to be at its name (the look failed: the
	// key fails with its error): as little of this open is left in it.
	if write && before.MadeByOpen(kd, d, sc) {
		if disk := sharedfs.FS(); disk.Remove(kd, db.FileName) == nil {
			disk.SyncDir(kd)
		}
	}
	d.Close()
	if merr != nil {
		return nil, db.Sidecars{}, merr
	}
	return nil, db.Sidecars{}, errMovedAside
}

// lockErr files an open of meta.db that got no lock: not had in time is
// Locked (a re-run picks the key up), a damaged or newer file is Failed
// with what check --repair can do, anything else Failed.
func lockErr(r *MigrateReport, err error) {
	switch {
	case errors.Is(err, db.ErrLockTimeout), errors.Is(err, store.ErrKeyLocked):
		r.Action, r.Cause = migrate.Locked, err.Error()
	case errors.Is(err, db.ErrDamaged), errors.Is(err, db.ErrNewerSchema):
		r.Action, r.Cause = migrate.Failed, fmt.Sprintf("%v: left alone (sessdb check --repair moves a damaged meta.db aside)", err)
	default:
		fail(r, err)
	}
}

// sameGen reports whether two records name the same generation: gen, size
// and CRC32C (the file names differ between a key dir and the fleet). Two
// records with no transcript are the same.
func sameGen(a, b *etcdmeta.Transcript) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Gen == b.Gen && a.Size == b.Size && a.CRC32C == b.CRC32C
}

// describe names a record's generation for a cause.
func describe(t *etcdmeta.Transcript) string {
	if t == nil {
		return "no transcript"
	}
	return fmt.Sprintf("gen %d (%d bytes, crc32c %s)", t.Gen, t.Size, store.Checksum(t.CRC32C))
}

// descends reports whether the generation src (with its history srcHist,
// its file under dir) descends from dst (with dstHist): a higher
// generation, whose history holds dst's newest entry or whose transcript
// begins with dst's bytes. from is where src's history goes on past what
// dst's holds: the entries a rollback appends. A dst with neither a
// transcript nor a history holds nothing a descendant could lose. A file
// that cannot be read does not descend: a caller that would call that a
// conflict judges the dir first (shared.DirErr). ctx's end stops the read
// of src's file (beginsWith) between chunks: err is then ctx's error, and
// ok says nothing (a stop is no conflict); err is nil otherwise.
func descends(ctx context.Context, dir string, src *etcdmeta.Transcript, srcHist []etcdmeta.HistoryEntry, dst *etcdmeta.Transcript, dstHist []etcdmeta.HistoryEntry) (from int, ok bool, err error) {
	if src == nil || dst != nil && src.Gen <= dst.Gen {
		return 0, false, nil
	}
	if n := len(dstHist); n > 0 {
		last := dstHist[n-1]
		last.Seq = 0
		for i, e := range srcHist {
			if e.Seq = 0; e == last {
				return i + 1, true, nil
			}
		}
	}
	switch {
	case dst == nil && len(dstHist) == 0:
		return 0, true, nil
	case dst == nil || dst.Size > src.Size:
		return 0, false, nil
	}
	if begins, err := beginsWith(ctx, dir, src.File, dst.Size, dst.CRC32C); err != nil || !begins {
		return 0, false, err
	}
	// The history was trimmed past dst's newest entry (or dst had none):
	// what src's holds after it in time is what is new.
	if n := len(dstHist); n > 0 {
		for from < len(srcHist) && srcHist[from].At <= dstHist[n-1].At {
			from++
		}
	}
	return from, true, nil
}

// newerEntries is where the history src goes on past dst's newest entry:
// just after that entry, or, when src's ring no longer holds it, after its
// time. A dst with no history has seen none of src's.
func newerEntries(src, dst []etcdmeta.HistoryEntry) int {
	n := len(dst)
	if n == 0 {
		return 0
	}
	last := dst[n-1]
	last.Seq = 0
	for i, e := range src {
		if e.Seq = 0; e == last {
			return i + 1
		}
	}
	from := 0
	for from < len(src) && src[from].At <= dst[n-1].At {
		from++
	}
	return from
}

// beginsWith reports whether the transcript name under dir begins with
// size bytes of CRC32C sum. ctx's end stops the read between chunks (the
// prefix may be gigabytes, on a slow file server), with ctx's error (err
// is nil otherwise: a file that cannot be read begins with nothing), so
// that a stop is not taken for a file that does not begin so (a
// conflict). Each read passes faults.FleetMigrateDescends first.
func beginsWith(ctx context.Context, dir, name string, size int64, sum uint64) (bool, error) {
	f, err := shared.Open(dir, name)
	if err != nil {
		return false, nil
	}
	defer f.Close()
	h := crc32.New(castagnoli)
	n, err := io.Copy(h, callerctx.Reader(ctx, pointReader{faults.FleetMigrateDescends, io.NewSectionReader(f, 0, size)}))
	if cerr := stopped(ctx, err); cerr != nil {
		return false, cerr
	}
	return err == nil && n == size && uint64(h.Sum32()) == sum, nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// checksum reads f whole from its start: its size and CRC32C. ctx's end
// stops the read between chunks (a file of gigabytes, or one on a slow
// file server, is not read on after a stop), its error wrapped.
func checksum(ctx context.Context, f *os.File) (int64, uint32, error) {
	h := crc32.New(castagnoli)
	n, err := io.Copy(h, callerctx.Reader(ctx, pointReader{faults.FleetMigrateChecksum, io.NewSectionReader(f, 0, 1<<62)}))
	if err != nil {
		return 0, 0, fmt.Errorf("read %s: %w", f.Name(), err)
	}
	return n, h.Sum32(), nil
}

// pointReader is r with the fault point p before each read.
type pointReader struct {
	p faults.Point
	r io.Reader
}

func (p pointReader) Read(b []byte) (int, error) {
	if err := faults.At(p.p); err != nil {
		return 0, err
	}
	return p.r.Read(b)
}

// valuesOf is a record as the report shows it.
func valuesOf(r etcdmeta.Record) *migrate.Values {
	v := &migrate.Values{Venue: r.Venue, ResumeChain: r.ResumeChain}
	if r.PiVersion != nil {
		v.PiVersion = *r.PiVersion
	}
	if t := r.Transcript; t != nil {
		v.Transcript = &migrate.Transcript{Gen: t.Gen, Size: t.Size, CRC32C: store.Checksum(t.CRC32C), PromotedAt: time.Unix(0, t.PromotedAt).UTC()}
	}
	if c := r.Context; c != nil {
		v.Context = &db.Context{Tokens: c.Tokens, Window: c.Window, Model: c.Model}
	}
	return v
}

// hostHistory is a key dir's history as etcd keeps it, each entry with its
// seq.
func hostHistory(h []db.HistoryEntry) []etcdmeta.HistoryEntry {
	out := make([]etcdmeta.HistoryEntry, len(h))
	for i, e := range h {
		out[i] = entryOf(e)
		out[i].Seq = e.Seq
	}
	return out
}

// transcriptOf is a key dir's record of its transcript in etcd's form.
func transcriptOf(t *db.Transcript) *etcdmeta.Transcript {
	if t == nil {
		return nil
	}
	return &etcdmeta.Transcript{Gen: t.Gen, Size: t.Size, CRC32C: t.CRC32C, PromotedAt: t.PromotedAt}
}
