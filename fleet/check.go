package fleet

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/fleet/etcdmeta"
	"sessdb/fleet/shared"
	"sessdb/internal/access"
	"sessdb/internal/callerctx"
	"sessdb/internal/fsat"
	"sessdb/internal/walk"
	"sessdb/store"
)

// KindOrphan is what Check calls a file in the transcripts dir that no
// record needs and that is older than the grace period: a generation
// superseded longer ago than that, one whose promotion lost its commit or
// never made it, a reaped key's, or a write that died (a temp). It is a
// notice: nothing that resumes is wrong, and reap sweeps such files.
const KindOrphan store.Kind = "orphan"

// CheckOptions says how Check runs. The zero value checks without
// repairing, with DefaultGrace, on the wall clock, and verifies every
// generation the records name however large.
type CheckOptions struct {
	// Repair removes the orphans, each key's under its lease-backed lock
	// and judged again there from a fresh read of its record, and under
	// the same lock numbers again a history whose newest entry is in the
	// last slot (etcdmeta's RenumberHistory); it gives a mode the owner's
	// bits it lacks, with no lock (bits are only added).
	Repair bool
	// Grace is the age past which a file no record needs is an orphan;
	// 0 means DefaultGrace. Now is the clock; nil means time.Now.
	Grace time.Duration
	Now   func() time.Time // the clock; nil: time.Now
	// MaxBytes: a record over it is not verified (a resolve refuses it
	// as too-large unread); 0 verifies every one.
	MaxBytes int64
	// Workers and Progress are as in InspectOptions.
	Workers  int
	Progress func(done, total int) // called after each key, when set
}

// Check examines every record and every entry of the transcripts dir,
// and passes each finding to visit, in name order; a record whose name
// is no key is named by its etcd key. It reports, in store's kinds: a
// record that does not decode or names a file not its key's
// (record-undecodable), one of a newer schema (meta-newer-schema), a
// generation file a record names that is missing or is not what the
// record says (transcript-mismatch: its size, and its CRC32C read no
// further than the record's size plus one byte), links, files that are
// not regular, a key's name that is not a directory, names that are no
// key (not-a-key, a record's or a history's), files the fleet does not
// write and a key's history with no record, which no write of the
// fleet's leaves (unknown-entry); the dir itself (path "."), its mark, a key dir or a record's generation
// without the owner's bits the fleet needs (mode), or another user's
// that the dir's owner may not use (owner: see check_access.go);
// and orphans (KindOrphan): files no record needs, judged by the rule
// Reap sweeps them by. A key's empty directory is no finding (it holds
// nothing to lose or look at; a power cut after a first promotion's mkdir
// leaves one): Reap alone removes it, reporting it as an orphan.
//
// Without Repair it writes nothing. With Repair it removes the orphans,
// renumbers a history in its last slot (see CheckOptions.Repair) and
// gives a mode the owner's bits it lacks, and nothing else: what else it finds is the operator's to judge. A visit
// error, etcd failing the listing, the transcripts dir unreadable or
// itself unavailable (shared.ErrDirUnavailable: judged once something in
// it failed, so that no key is reported missing for it), or ctx ending
// stops the walk; the summary then counts what was examined. etcd failing a key stops it too, once the
// keys under way beside it are done: their findings, orphans removed
// among them, are delivered before the key's error is returned. A nil
// visit is no callback: the summary alone tells what was found.
func (b *Backend) Check(ctx context.Context, o CheckOptions, visit func(store.Finding) error) (store.CheckSummary, error) {
	if err := b.opened(); err != nil {
		return store.CheckSummary{}, err
	}
	ctx = callerctx.Of(ctx) // nil is context.Background()
	if visit == nil {
		visit = func(store.Finding) error { return nil }
	}
	sum, err := b.check(ctx, o, visit)
	return sum, callersEnd(ctx, err)
}

func (b *Backend) check(ctx context.Context, o CheckOptions, visit func(store.Finding) error) (store.CheckSummary, error) {
	var sum store.CheckSummary
	// Every file is judged by this fleet's records: the dir must be its
	// own (a check without Repair compares, and marks nothing).
	if err := b.claim(ctx, o.Repair); errors.Is(err, fs.ErrPermission) {
		if err := b.unreadTop(ctx, o, visit, &sum, err); err != nil {
			return sum, err
		}
	} else if err != nil {
		return sum, err
	}
	now, grace := time.Now, o.Grace
	if o.Now != nil {
		now = o.Now
	}
	if grace <= 0 {
		grace = DefaultGrace
	}
	fileNow := now()
	if o.Repair {
		fileNow = b.fileNow(fileNow)
	}
	cut := fileNow.Add(-grace)
	records := map[string]etcdmeta.Item{}
	if err := b.meta.List(ctx, func(it etcdmeta.Item) error {
		records[it.Key] = judged(it)
		return nil
	}); err != nil {
		return sum, err
	}
	// A history whose key had no record in the listing: walked as a key
	// of its own (read again there, as every key is). A history at a name
	// that is no key is named whether or not a record of that name is
	// there too: each is foreign input, removed by its own etcdctl del.
	// A key at a history's bare name (etcdmeta.HistoryNames) is looked
	// at with its key, a record's or not.
	histories, bare := map[string]bool{}, map[string]bool{}
	if err := b.meta.HistoryNames(ctx, func(name string, isBare bool) error {
		if _, ok := records[name]; !ok || !etcdmeta.ValidKey(name) {
			histories[name] = true
		}
		if isBare {
			// A key's read again at its look (bareHistory); a name that
			// is no key's, which no sessdb write makes, as listed.
			bare[name] = true
		}
		return nil
	}); err != nil {
		return sum, err
	}
	inFlight := fileNow.Add(-inFlightAge)
	// A key dir the listing cannot read is reported unreadable when the
	// walk comes to it.
	listed := map[string]time.Time{} // each orphan's mtime, for the repair
	listing, err := shared.ListOrphans(ctx, b.dir, func(key, name string, mtime time.Time) bool {
		it, ok := records[key]
		if needs(it, ok, name, mtime, cut, inFlight, unreadHistory) {
			return true
		}
		listed[name] = mtime
		return false
	}, cut)
	if err != nil {
		return sum, err
	}
	root, err := fsat.OpenDir(b.dir)
	if err != nil {
		return sum, shared.DirErrOr(b.dir, err)
	}
	defer root.Close()
	c := &checker{b: b, o: o, root: root, owner: dirOwner(root), records: records, histories: histories, bare: bare, orphans: map[string][]string{}, now: now(), cut: cut, fileNow: fileNow, inFlight: inFlight, listed: listed, inDir: listing.Names}
	if err := c.checkTop(visit, &sum); err != nil {
		return sum, err
	}
	for _, name := range listing.Orphans {
		key, _, _ := strings.Cut(name, "/")
		c.orphans[key] = append(c.orphans[key], name)
	}
	// The names that are no key's with a record come from the listing
	// that found the orphans, not from a second one.
	entries := slices.Sorted(maps.Keys(records))
	for n := range histories {
		if _, recorded := records[n]; recorded {
			continue // one entry with its record
		}
		if _, listed := slices.BinarySearch(listing.Names, n); !listed {
			entries = append(entries, n)
		}
	}
	for _, n := range listing.Names {
		// The dir's mark was found this fleet's before the walk (claim):
		// it is no entry of the store's, unless a history has its name.
		if _, ok := records[n]; !ok && (n != shared.MarkName || histories[n]) {
			entries = append(entries, n)
		}
	}
	slices.Sort(entries)
	type result struct {
		key      bool
		findings []store.Finding
		err      error
	}
	work := func(i int) result {
		fs, err := c.entry(ctx, entries[i])
		return result{etcdmeta.ValidKey(entries[i]), fs, err}
	}
	// A key that stops the walk (etcd lost) stops no key already under
	// way beside it, and with Repair those may have removed orphans: a
	// removal is for good, so theirs are delivered too, as an interrupt
	// delivers them, and the walk then returns the key's error.
	wctx, halt := walk.WithHalt(ctx)
	defer halt.Release()
	_, err = walk.Ordered(wctx, len(entries), walk.Workers(o.Workers), work, func(r result) error {
		if r.err != nil && r.findings == nil {
			return halt.Stop(r.err)
		}
		sum.Entries++
		if r.key {
			sum.Keys++
		}
		for _, f := range r.findings {
			count(&sum, f)
			if err := visit(f); err != nil {
				return err
			}
		}
		if r.err != nil {
			// A repair stopped (etcd, the dir): the key's findings say
			// what it did and did not remove.
			return halt.Stop(r.err)
		}
		if o.Progress != nil {
			o.Progress(sum.Entries, len(entries))
		}
		return nil
	})
	return sum, halt.Err(err)
}

func count(sum *store.CheckSummary, f store.Finding) {
	if f.Repaired {
		sum.Repaired++
	}
	if f.Severity == store.SeverityProblem {
		sum.Problems++
		if f.Remains {
			sum.Remaining++
		}
	} else {
		sum.Notices++
	}
}

// checker is one Check's snapshot: the records, the orphans by key.
type checker struct {
	b       *Backend
	o       CheckOptions
	root    *os.File
	owner   *access.Owner // the transcripts dir's, nil when not known
	records map[string]etcdmeta.Item
	// histories are the names with a history and no record listed, and
	// those with a history that are no key, a record listed or not;
	// bare, the names with a key at their history's bare name (a key's
	// or not).
	histories, bare map[string]bool
	orphans         map[string][]string
	now, cut        time.Time
	fileNow         time.Time // now by the file server's clock, which stamps the files' mtimes
	inFlight        time.Time // the in-flight window's start (inFlightAge) by that clock
	// listed is each orphan's mtime as the listing found it: the repair
	// judges it again by the record read under the key's lock.
	listed map[string]time.Time
	// inDir is every name the listing found in the dir itself, sorted
	// (Listing.Names).
	inDir []string
}

// entry examines one name: its record, if it has one, and what the
// transcripts dir holds under it; then, with Repair, removes its orphans.
func (c *checker) entry(ctx context.Context, name string) ([]store.Finding, error) {
	var out []store.Finding
	add := func(path string, kind store.Kind, format string, args ...any) *store.Finding {
		f := store.Finding{Path: path, Kind: kind, Severity: kind.Severity(), Detail: c.b.unroot(fmt.Sprintf(format, args...)), Remains: true}
		if etcdmeta.ValidKey(name) {
			f.Key = name
		}
		out = append(out, f)
		return &out[len(out)-1]
	}
	c.b.at(hookCheckEntry, name)
	look := func() error {
		own := ""
		it, ok := c.records[name]
		var hist history
		if ok {
			var err error
			if own, err = c.record(ctx, &it, &hist, add); err != nil {
				return err
			}
			ok = it.Rev != 0 || it.Err != nil
		}
		if c.histories[name] {
			// No record listed, or a name that is no key (its record,
			// if any, named above).
			if err := c.strayHistory(ctx, name, add); err != nil {
				return err
			}
		}
		if c.bare[name] && !etcdmeta.ValidKey(name) {
			k := c.b.meta.BareHistoryKey(name)
			add(k, store.KindNotAKey, "a key at the bare name of a history whose name is not a key (a key is 32 lowercase hex), which no sessdb write makes and sessdb never reads; sessdb leaves it: remove it with etcdctl del %s", etcdctlKey(k))
		} else if c.bare[name] {
			if err := c.bareHistory(ctx, name, add); err != nil {
				return err
			}
		}
		if name == shared.MarkName {
			return nil // the dir's mark, found the fleet's by claim
		}
		return c.dir(name, own, it, hist, ok, add)
	}
	if err := look(); err != nil {
		return nil, err
	}
	if c.o.Repair {
		c.repairModes(out)
		// A mode given back changes what a look sees: a key dir its
		// owner could not enter hid its generation's mode, and a
		// generation it could not read was unreadable. So the key is
		// looked at again after each round of modes mended, at most
		// twice (the key dir, then what it hid), and what the last look
		// finds replaces what the ones before could not see: mended in
		// this run, not the next (ownrev3: three runs). Each entry's
		// mode is reported once, as mended; a look after that finds it
		// lacking again (its owner changed it back) leaves it remaining,
		// not mended twice (ownrev4). Orphans come from the listing made
		// before the walk, which could not list such a key dir: its
		// orphans are the next run's.
		var mended []store.Finding
		isMended := func(f store.Finding) bool {
			return slices.ContainsFunc(mended, func(m store.Finding) bool { return m.Path == f.Path && m.Kind == f.Kind })
		}
		for range 2 {
			fresh := slices.DeleteFunc(slices.Clone(out), func(f store.Finding) bool {
				return f.Kind != store.KindMode || !f.Repaired || isMended(f)
			})
			if len(fresh) == 0 {
				break
			}
			mended = append(mended, fresh...)
			out = nil
			if err := look(); err != nil {
				return mended, err
			}
			out = slices.DeleteFunc(out, func(f store.Finding) bool {
				i := slices.IndexFunc(mended, func(m store.Finding) bool { return m.Path == f.Path && m.Kind == f.Kind })
				if i >= 0 {
					mended[i].Remains = true
				}
				return i >= 0
			})
			c.repairModes(out)
		}
		out = append(mended, out...)
		if err := c.repair(ctx, name, out); err != nil {
			// Delivered with the error: what the repair removed before
			// it is removed for good.
			return out, err
		}
	}
	return out, nil
}

// record checks one record and the generation file it names, and returns
// that file's name when it is the key's own. It leaves in it the record as
// read now, with the key's history (Rev 0: the key is gone since the
// listing), where that read succeeded, and that history in hist.
func (c *checker) record(ctx context.Context, it *etcdmeta.Item, hist *history, add addFunc) (string, error) {
	path := c.b.meta.RecordKey(it.Key)
	switch {
	case !etcdmeta.ValidKey(it.Key):
		add(c.b.meta.RecordKey(it.Key), store.KindNotAKey, "a record whose name is not a key (a key is 32 lowercase hex); sessdb leaves it alone")
		return "", nil
	case errors.Is(it.Err, etcdmeta.ErrNewerSchema):
		add(path, store.KindMetaNewerSchema, "%v; use a sessdb that knows its schema", it.Err)
		return "", nil
	case it.Err != nil:
		add(path, store.KindRecordUndecodable, "%v (resolve: meta-unreadable)", it.Err)
		return "", nil
	}
	st, fresh, err := c.history(ctx, it.Key, add)
	if fresh {
		*hist = history{entries: st.History, rev: st.Rev}
	}
	switch {
	case err != nil:
		return "", err
	case fresh && st.Rev == 0:
		// Reaped since the listing: gone as it should be, nothing of it
		// to check (its files, if any are left, are the dir's).
		*it = etcdmeta.Item{Key: it.Key}
		return "", nil
	case fresh && st.Rev != it.Rev:
		// Promoted since the listing: the generation to check is the
		// one the record names now (the one before is kept for the
		// grace period, and judged with the dir).
		it.Rev, it.Record = st.Rev, st.Record
	}
	t := it.Record.Transcript
	switch {
	case t == nil:
		return "", nil // no transcript to check: a resolve finds it absent
	case !namesOwnFile(it.Key, t):
		add(path, store.KindRecordUndecodable, "%s (resolve: meta-unreadable)", recordFault(it.Key, t))
		return "", nil
	}
	c.b.at(hookCheckOpen, it.Key)
	f, err := shared.Open(c.b.dir, t.File)
	if err != nil && !errors.Is(err, shared.ErrNotRegular) {
		// The dir itself gone is no key's file missing: the walk stops.
		if err := shared.DirErr(c.b.dir); err != nil {
			return "", err
		}
	}
	switch {
	case gone(err) && c.movedOn(ctx, it, t.File):
		return "", nil
	case gone(err):
		add(t.File, store.KindTranscriptMismatch, "missing, but the record describes gen %d (%d bytes); resolve: transcript-replaced", t.Gen, t.Size)
		return t.File, nil
	case errors.Is(err, shared.ErrNotRegular):
		// The file, or the key's directory above it, which dir reports.
		key, file, _ := strings.Cut(t.File, "/")
		if kd, err := fsat.OpenDirAt(c.root, key); err == nil {
			c.special(kd, file, t.File, add)
			kd.Close()
		}
		return t.File, nil
	case err != nil:
		add(t.File, store.KindUnreadable, "%v", err)
		return t.File, nil
	}
	defer f.Close()
	fi, err := statGeneration(f)
	if err != nil {
		if err := shared.DirErr(c.b.dir); err != nil {
			return "", err
		}
	}
	switch {
	case err != nil && gone(err) && c.movedOn(ctx, it, t.File):
		return "", nil
	case gone(err):
		// Removed between the open and the fstat: missing, as at the open.
		add(t.File, store.KindTranscriptMismatch, "missing, but the record describes gen %d (%d bytes); resolve: transcript-replaced", t.Gen, t.Size)
		return t.File, nil
	case err != nil:
		add(t.File, store.KindUnreadable, "%v", err)
		return t.File, nil
	}
	if err := c.b.at(hookVerify, it.Key); err != nil {
		f.Close() // the tests' stand-in for a file another host removed
	}
	v, err := store.VerifyRecorded(ctx, f, fi.Size(), t.Size, t.CRC32C, c.o.MaxBytes)
	if err != nil {
		return "", err
	}
	if v.Result == store.VerifyUnreadable {
		if err := shared.DirErr(c.b.dir); err != nil {
			return "", err
		}
	}
	switch {
	case v.Result == store.VerifyUnreadable && c.movedOn(ctx, it, t.File):
		return "", nil
	case v.Result == store.VerifyMismatch:
		add(t.File, store.KindTranscriptMismatch, "%s (gen %d), changed out of band or torn; resolve: transcript-replaced", v.Detail, t.Gen)
	case v.Result == store.VerifyUnreadable:
		add(t.File, store.KindUnreadable, "%s", v.Detail)
	}
	return t.File, nil
}

// movedOn reports whether key's record, read once more after its file
// was found gone or its reads failed, no longer names file: a reap removed
// the key (over NFS, another host's removal fails the reads of a file
// open here with ESTALE), or a promotion moved it on, between the walk's
// read of the record and the file's open or read. it is then left as read
// now (Rev 0: gone). A read that fails says nothing: the file is reported.
func (c *checker) movedOn(ctx context.Context, it *etcdmeta.Item, file string) bool {
	st, err := c.b.readIn(ctx, it.Key, c.b.meta.GetRecord)
	switch {
	case err != nil:
		return false
	case st.Rev == 0:
		*it = etcdmeta.Item{Key: it.Key}
		return true
	case st.Record.Transcript == nil || st.Record.Transcript.File != file:
		it.Rev, it.Record = st.Rev, st.Record
		return true
	}
	return false
}

// history reads key's history, which a resolve never does and a promotion
// does only after a lost compare or before recording a refusal: an entry
// that does not decode makes those fail (promote-failed) until it is
// removed, while the key resumes as if nothing were wrong. It returns the
// key as read now, with its record (fresh), unless that read failed: the
// listing may be long out of date by the time the walk comes to the key.
func (c *checker) history(ctx context.Context, key string, add addFunc) (st etcdmeta.State, fresh bool, err error) {
	st, err = c.b.readIn(ctx, key, c.b.meta.Get)
	switch {
	case err == nil, errors.Is(err, etcdmeta.ErrAboveLastSlot):
		if n := len(st.History); n > 0 && etcdmeta.LastSlot(st.History[n-1].Seq) {
			seq, where := st.History[n-1].Seq, "in the last slot a history entry takes"
			if seq == math.MaxUint64 {
				// Never written by this sessdb (a write stops below it,
				// Create refuses it), but by an older one, whose write
				// claimed it and whose Create took it as given, or by
				// another binary: renumbered as the last slot is, the
				// entry kept.
				where = "above the last slot a history entry takes (written by an older sessdb, or another binary)"
			}
			what := "every promotion and refusal of the key is promote-failed (resolve still resumes it); check --repair numbers the history again in place, the record kept"
			if st.Rev == 0 {
				// A history with no record (strayHistory): the renumber
				// is guarded by a record, and refuses one.
				what = "every promotion of the key is promote-failed (a resolve cold-starts it: it has no record); check --repair numbers no history without a record: remove it with etcdctl del --prefix " + etcdctlKey(c.b.meta.HistoryDir(key))
			}
			add(c.slotPath(key, seq), store.KindRecordUndecodable, "%s: no entry can follow it, so %s", where, what)
		}
		return st, true, nil
	case errors.Is(err, etcdmeta.ErrDamaged), errors.Is(err, etcdmeta.ErrNewerSchema):
		// Get returns the State's Rev with the damage: 0 is no record
		// (strayHistory), which a resolve cold-starts rather than resumes.
		resolve := "resolve still resumes the key"
		if st.Rev == 0 {
			resolve = "a resolve cold-starts the key (absent): it has no record"
		}
		add(c.b.meta.HistoryDir(key), store.KindRecordUndecodable,
			"%v (%s; a promotion that must read its history is promote-failed)", err, resolve)
		return st, false, nil
	}
	return st, false, err
}

// strayHistory looks at a history whose key had no record in the
// listing, read again with the key: no sessdb write leaves one (a
// promotion writes record and history in one transaction, a reap removes
// both in one, an append or renumber is guarded by the record), so it is
// a record removed alone (etcdctl del), an older binary's or another
// tool's. A resolve cold-starts the key (absent), but the key's next
// promotion starts it again at gen 1 and adds its entries to this
// history, and migrate --to etcd leaves the
// key alone: a notice, naming what removes it. A key with a record now
// (promoted since the listing) is nothing to report; damage in the
// history is reported as a recorded key's is.
func (c *checker) strayHistory(ctx context.Context, name string, add addFunc) error {
	dir := c.b.meta.HistoryDir(name)
	if !etcdmeta.ValidKey(name) {
		if c.bare[name] {
			// Listed by its bare key (reported with it): a history of
			// that name only if entries follow it.
			if has, err := c.b.meta.HasHistoryEntries(ctx, name); err != nil || !has {
				return err
			}
		}
		add(dir, store.KindNotAKey, "a history whose name is not a key (a key is 32 lowercase hex); sessdb leaves it alone")
		return nil
	}
	st, fresh, err := c.history(ctx, name, add)
	if err != nil || st.Rev != 0 || (fresh && len(st.History) == 0) {
		// etcd failing; a record now; or the history gone since.
		return err
	}
	add(dir, store.KindUnknownEntry, "a history with no record: no sessdb write leaves one (the record removed alone with etcdctl, an older binary's or another tool's); a resolve cold-starts the key (absent), its next promotion starts the key again at gen 1 and adds its entries to this history, and migrate --to etcd leaves the key alone; the key's files in the transcripts dir are no record's, each an orphan, which reap removes, once it is %d minutes old (a promotion of the key may be under way) and past the grace period; sessdb leaves the history: remove it with etcdctl del --prefix %s", int(inFlightAge/time.Minute), etcdctlKey(dir))
	return nil
}

// bareHistory reports a key at the bare name of key's history
// (etcdmeta.BareHistoryKey), listed, if it is there still: none of
// sessdb's writes, put by hand or by another tool. No read of the key's
// history finds it and no removal of the history removes it, neither a
// reap nor the etcdctl del --prefix check names for a history with no
// record, so alone it is a history with no entry that dump lists, and
// it outlives every reap of the key: a notice, naming the etcdctl del
// that removes it.
func (c *checker) bareHistory(ctx context.Context, key string, add addFunc) error {
	there, err := c.b.meta.HasBareHistoryKey(ctx, key)
	if err != nil || !there {
		return err
	}
	k := c.b.meta.BareHistoryKey(key)
	add(k, store.KindUnknownEntry, "a key at the bare name of the key's history, which no sessdb write makes (a history's entries are under %s/) and sessdb never reads; it outlives the key's reap and an etcdctl del --prefix of the history; sessdb leaves it: remove it with etcdctl del %s", k, etcdctlKey(k))
	return nil
}

type addFunc func(path string, kind store.Kind, format string, args ...any) *store.Finding

// special reports name in dir (path, as reports name it), which the
// fleet never follows or reads: a link, or anything but a regular file;
// true if it was found gone.
func (c *checker) special(dir *os.File, name, path string, add addFunc) bool {
	st, err := fsat.LstatAt(dir, name)
	switch {
	case gone(err):
		// Gone since its directory was listed (see checker.dir).
		return true
	case err != nil:
		add(path, store.KindUnreadable, "%v", err)
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		buf := make([]byte, 512)
		n, _ := unix.Readlinkat(int(dir.Fd()), name, buf)
		add(path, store.KindLink, "a symbolic link to %q; sessdb never follows it", buf[:max(n, 0)])
	case !fsat.IsRegular(&st):
		add(path, store.KindNotRegular, "a %s, not a regular file; sessdb never reads it", fsat.Kind(&st))
	}
	return false
}
