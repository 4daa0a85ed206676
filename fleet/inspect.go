package fleet

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/fleet/etcdmeta"
	"sessdb/fleet/shared"
	"sessdb/gates"
	"sessdb/internal/callerctx"
	"sessdb/internal/fsat"
	"sessdb/internal/walk"
	"sessdb/store"
	"sessdb/store/transcript"
)

// LayoutEtcd is the layout a fleet's key reports: its record in etcd, its
// transcripts in the shared directory.
const LayoutEtcd store.Layout = "etcd"

// InspectOptions says what Inspect reports. The zero value reports every
// record with no history, reads no generation past its first line, judges
// with no bounds on the wall clock, and gives the verdict of an unknown
// job.
type InspectOptions struct {
	// Bounds and Now are the ladder's bounds and clock, as the resolves'.
	Bounds gates.Bounds
	Now    func() time.Time // the clock; nil: time.Now
	// History is how many of each key's newest history entries to report
	// (at most etcdmeta.HistoryLimit).
	History int
	// Only reports this one key instead of every record.
	Only string
	// Verify reads each generation file the records name, at most its
	// record's size plus one byte, and checks its size and CRC32C.
	Verify bool
	// Job is the job the verdict is judged for; nil: every job at once,
	// as store.InspectOptions.Job.
	Job *store.Job
	// Workers bounds the keys read at once (0: a default for the
	// machine); Progress, when set, is called after each report with
	// the reports so far and the total: the records are walked as they
	// are listed, so it is the records etcd held at the listing's first
	// page (the count etcd sends with it) and the keys with a history
	// and no record met so far, never below done (1 with Only).
	Workers  int
	Progress func(done, total int) // called after each report, when set
}

// Report is one record as Inspect reports it: in the key dir's report
// type, with the fields only a key dir has (meta pages, the meta.db's
// schema and creation, a pending promotion, legacy files) left empty,
// and the generation file the record names.
type Report struct {
	store.KeyReport
	// File is the generation file the record names, relative to the
	// transcripts dir; "" when the record names none that is the key's.
	File string
	// stray is set for a key with a history and no record (reported
	// absent, with no layout): Stats counts it as a key of the fleet.
	stray bool
}

// Inspect reports every record in key order to visit, read-only: it
// writes nothing to etcd or to the transcripts dir. The records are one
// snapshot (etcdmeta.List), walked a page at a time as they are listed
// (a window of keys and a page held, not every record); each key's
// history, with History, is read with the record again, at one revision,
// after the key was listed (the records of etcdmeta.GetManyMost listed
// keys in one read: getBatch). A record that does not decode
// is reported with its error and the verdict meta-unreadable; a
// generation file that cannot be opened, or its first line read, for an
// I/O error (not for being gone) is reported with no verdict, for the
// caller to count as a fault; one gone at the open, at the fstat after
// it, at its first line or under Verify's read is missing,
// transcript-replaced, unless the record read again has moved on: a key
// reaped meanwhile is then "no record", absent, as a resolve finds it,
// and one promoted meanwhile is reported at its new record. A key with a
// history and no record (etcdmeta.HistoryKeys; no write of this sessdb
// leaves one) is reported in its place, absent, "no record, but a
// history of N entries", its entries with History. A transcripts dir
// that is itself unavailable (shared.ErrDirUnavailable, judged once a
// generation failed so) stops the walk: it is no key's file that is lost.
// A visit error stops the walk and is returned; so is ctx's error, and an
// error of etcd (unavailable, refused credentials): before anything is
// visited where the listing's first page fails, after the keys listed
// before it where a later page fails. A nil visit is no callback.
func (b *Backend) Inspect(ctx context.Context, o InspectOptions, visit func(Report) error) error {
	if err := b.opened(); err != nil {
		return err
	}
	ctx = callerctx.Of(ctx) // nil is context.Background()
	if visit == nil {
		visit = func(Report) error { return nil }
	}
	return callersEnd(ctx, b.inspect(ctx, o, visit))
}

func (b *Backend) inspect(ctx context.Context, o InspectOptions, visit func(Report) error) error {
	if o.Now == nil {
		o.Now = time.Now
	}
	// The records are walked as they are listed, a page at a time: a
	// fleet's records, whole (another binary's, or a hand's, may be as
	// large as etcd takes), are never all held at once.
	var total atomic.Int64
	produce := func(emit func(etcdmeta.Item) error) error {
		return b.listWithStrays(ctx, func(n int64) { total.Add(n) }, emit)
	}
	if o.Only != "" {
		it, err := b.item(ctx, o.Only)
		if err != nil {
			return err
		}
		total.Store(1)
		produce = func(emit func(etcdmeta.Item) error) error { return emit(it) }
	}
	type result struct {
		r   Report
		err error
	}
	work := func(l listed) result {
		r, err := b.inspectKey(ctx, l, o)
		return result{r, err}
	}
	items := func(emit func(listed) error) error {
		return produce(func(it etcdmeta.Item) error { return emit(listed{Item: it}) })
	}
	if o.History > 0 && o.Only == "" && getBatch > 1 {
		items = func(emit func(listed) error) error {
			var batch []listed
			flush := func() error {
				if len(batch) == 0 {
					return nil
				}
				b.prefetch(ctx, batch)
				out := batch
				batch = nil
				for _, l := range out {
					if err := emit(l); err != nil {
						return err
					}
				}
				return nil
			}
			err := produce(func(it etcdmeta.Item) error {
				batch = append(batch, listed{Item: it})
				if len(batch) < getBatch {
					return nil
				}
				return flush()
			})
			if ferr := flush(); err == nil {
				err = ferr
			}
			return err
		}
	}
	done := 0
	_, err := walk.Stream(ctx, walk.Workers(o.Workers), items, work, func(res result) error {
		if res.err != nil {
			return res.err
		}
		err := visit(res.r)
		done++
		if o.Progress != nil {
			// The total is known as the walk goes (InspectOptions):
			// never shown below what is done.
			o.Progress(done, max(int(total.Load()), done))
		}
		return err
	})
	return err
}

// listWithStrays calls emit with each record List lists, in key order,
// and, in its place among them, with a key of its own (an Item with Rev
// 0) for each key that has a history and no record listed (see
// checker.strayHistory): dump shows it, and its history. A history whose
// name is no key and has no record is emitted too, as check names it
// (not-a-key): dump reports it "not a key", as it does such a record.
// HistoryKeys may give such a name out of its order among the others
// (a name another sorts among the keys of: "a!" before "a"): one not
// emitted in its place is emitted after the records, unless a record
// had it; a key given after such a name is emitted right after it. The
// histories' names (etcdmeta.HistoryKeys) are read beside the records, a
// page of each at a time, from once the records' first page is read.
// counted is given the records' count (etcdmeta.ListCounted), and one
// more for each such key, when it is met. An error of either listing, or emit's, stops
// it and is returned.
func (b *Backend) listWithStrays(ctx context.Context, counted func(int64), emit func(etcdmeta.Item) error) error {
	var histErr error
	next, stop := iter.Pull(func(yield func(string) bool) {
		histErr = b.meta.HistoryKeys(ctx, func(name string) error {
			if err := b.at(hookHistoryListed, name); err != nil {
				return err
			}
			if !yield(name) {
				return errEnoughNames
			}
			return nil
		})
	})
	defer stop()
	// pending is the next name with a history not yet placed (each once:
	// HistoryKeys gives the keys in key order), while have. late are the
	// names that are no key HistoryKeys gave out of that order, and
	// emitted those such names emitted already, a record's or a history's.
	// lastKey is the last key (a valid name) pulled, and lastRecord the
	// last valid one of a record emitted: a key HistoryKeys gives after
	// a name that sorts after it (its own name with a character below
	// '/' appended: "<key>!" before "<key>"), above lastKey, is a key
	// not met yet, a history with no record unless the records passed
	// it meanwhile (lastRecord), and is placed next.
	pending, have, pulled := "", false, false
	lastKey, lastRecord := "", ""
	late, emitted := map[string]bool{}, map[string]bool{}
	pull := func() error {
		prev := pending
		for {
			pending, have = next()
			if !have {
				return histErr
			}
			valid := etcdmeta.ValidKey(pending)
			switch {
			case !pulled || pending > prev:
				pulled = true
				if valid {
					lastKey = pending
				}
				return nil
			case pending == prev:
			case !valid:
				late[pending] = true
			case pending > lastKey:
				lastKey = pending
				if pending != lastRecord {
					return nil
				}
			}
		}
	}
	stray := func() error {
		counted(1)
		if !etcdmeta.ValidKey(pending) {
			emitted[pending] = true
		}
		if err := emit(etcdmeta.Item{Key: pending}); err != nil {
			return err
		}
		return pull()
	}
	started := false
	err := b.meta.ListCounted(ctx, counted, func(it etcdmeta.Item) error {
		if err := b.at(hookListed, it.Key); err != nil {
			return err
		}
		if !started {
			// The histories are listed after the records' first page,
			// at a revision no older: a key promoted in between is a
			// history of no record listed, read again at its turn.
			started = true
			if err := pull(); err != nil {
				return err
			}
		}
		for have && pending < it.Key {
			if err := stray(); err != nil {
				return err
			}
		}
		if have && pending == it.Key {
			if err := pull(); err != nil {
				return err
			}
		}
		if etcdmeta.ValidKey(it.Key) {
			lastRecord = it.Key
		} else {
			emitted[it.Key] = true
		}
		return emit(it)
	})
	if err != nil {
		return err
	}
	if !started {
		if err := pull(); err != nil {
			return err
		}
	}
	for have {
		if err := stray(); err != nil {
			return err
		}
	}
	for _, name := range slices.Sorted(maps.Keys(late)) {
		if emitted[name] {
			continue
		}
		counted(1)
		if err := emit(etcdmeta.Item{Key: name}); err != nil {
			return err
		}
	}
	return nil
}

// getBatch is how many listed records a walk that reads histories
// (InspectOptions.History) reads at once, record and history again, in
// one etcd read (etcdmeta.GetMany); 1 or less: each with its own Get.
var getBatch = etcdmeta.GetManyMost

// listed is a listed record, with its record and history read again
// (prefetch) where st is set: what Get returned for it, and stErr.
type listed struct {
	etcdmeta.Item
	st    *etcdmeta.State
	stErr error
}

// prefetch reads the records and histories of batch's records again, in
// one read (etcdmeta.GetMany), after each was listed: a key reaped since
// its listing has no record there, as Get would find. The read is tried
// again while etcd is unavailable, within the request timeout, as a
// key's Get is (readIn). Where it still fails so, or etcd refuses the
// credentials, or ctx ended, the first key is given the error, and the
// walk stops at it as at its own Get; where it fails otherwise (an
// answer over its bound, an etcd whose --max-txn-ops is below twice
// GetManyMost), none is set and each key's Get reads it alone.
func (b *Backend) prefetch(ctx context.Context, batch []listed) {
	var keys []string
	var at []int
	for i, l := range batch {
		if l.Rev != 0 && etcdmeta.ValidKey(l.Key) {
			keys, at = append(keys, l.Key), append(at, i)
		}
	}
	if len(keys) == 0 {
		return
	}
	c, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	var sts []etcdmeta.State
	var errs []error
	err := untilAnswered(c, func(c context.Context) (err error) {
		sts, errs, err = b.meta.GetMany(c, keys)
		return err
	})
	switch {
	case err == nil:
	case errors.Is(err, etcdmeta.ErrUnavailable), errors.Is(err, etcdmeta.ErrAuth), ctx.Err() != nil:
		batch[at[0]].st, batch[at[0]].stErr = &etcdmeta.State{}, err
		return
	default:
		return
	}
	for j, i := range at {
		batch[i].st, batch[i].stErr = &sts[j], errs[j]
	}
}

// errEnoughNames ends a listing of the histories' names no more are
// wanted from.
var errEnoughNames = errors.New("no more names wanted")

// item reads one key's record as List would report it; a key with no
// record is an Item with Rev 0.
func (b *Backend) item(ctx context.Context, key string) (etcdmeta.Item, error) {
	st, err := b.readIn(ctx, key, b.meta.GetRecord)
	it := etcdmeta.Item{Key: key, Rev: st.Rev, Record: st.Record}
	if errors.Is(err, etcdmeta.ErrDamaged) || errors.Is(err, etcdmeta.ErrNewerSchema) {
		it.Err, err = err, nil
	}
	return it, err
}

// inspectKey reports one record. Its error is etcd's (a history read) or
// ctx's (a verify it ended): the walk stops on it. A generation found gone
// has the record read again, as View does (lookAgainIfMoved): the listing
// may be minutes old.
func (b *Backend) inspectKey(ctx context.Context, l listed, o InspectOptions) (Report, error) {
	var r Report
	err := lookAgainIfMoved(func() (lost bool, err error) {
		r, err = b.inspectRecord(ctx, l, o, &lost)
		return lost, err
	}, func() bool {
		now, err := b.item(ctx, l.Key)
		if err != nil || now.Rev == l.Rev {
			return false
		}
		l = listed{Item: now}
		return true
	})
	return r, err
}

// inspectRecord is one look of inspectKey; it sets *lost where the
// generation the record names was found gone.
func (b *Backend) inspectRecord(ctx context.Context, l listed, o InspectOptions, lost *bool) (Report, error) {
	it := l.Item
	r := Report{KeyReport: store.KeyReport{Name: it.Key}}
	k := &r.KeyReport
	if !etcdmeta.ValidKey(it.Key) {
		k.Problem = "not a key"
		return r, nil
	}
	if it.Rev == 0 && it.Err == nil {
		// No record listed: a key reaped since, or a history left
		// without its record (listWithStrays, dump KEY).
		st, err := b.readIn(ctx, it.Key, b.meta.Get)
		damaged := errors.Is(err, etcdmeta.ErrDamaged) || errors.Is(err, etcdmeta.ErrNewerSchema)
		switch {
		case err != nil && !damaged:
			return r, err
		case st.Rev != 0:
			// Promoted since: reported as it is now.
			now, err := b.item(ctx, it.Key)
			if err != nil {
				return r, err
			}
			if now.Rev != 0 || now.Err != nil {
				return b.inspectRecord(ctx, listed{Item: now}, o, lost)
			}
			// Reaped again since: no record, below.
		case err == nil && len(st.History) == 0:
			// A key at its history's bare name alone, which HistoryNames
			// lists and no read of the history finds: said, as check
			// says it (bareHistory).
			bare, err := b.meta.HasBareHistoryKey(ctx, it.Key)
			if err != nil {
				return r, err
			}
			if bare {
				k.Problem = "no record and no history, but a key at its history's bare name, which sessdb never reads (put by hand, or another tool's: see check)"
				k.Verdict = &store.VerdictReport{Reason: string(gates.Absent)}
				return r, nil
			}
		default:
			k.Problem = fmt.Sprintf("no record, but a history of %s (the record removed alone, or another binary's: see check)", countEntries(len(st.History), ""))
			if err != nil {
				k.Problem = "no record, but a history that does not decode (the record removed alone, or another binary's: see check)"
				k.MetaError = b.unroot(err.Error())
			}
			k.Verdict = &store.VerdictReport{Reason: string(gates.Absent)}
			if o.History > 0 {
				k.History = historyReports(st.History, o.History)
			}
			r.stray, k.EtcdBytes, k.HistoryFull = true, &st.Bytes, st.HistoryRead >= etcdmeta.HistoryLimit
			return r, nil
		}
	}
	if o.History > 0 && it.Rev != 0 {
		var st etcdmeta.State
		var err error
		if l.st != nil {
			st, err = *l.st, l.stErr
		} else {
			st, err = b.readIn(ctx, it.Key, b.meta.Get)
		}
		switch {
		case err == nil:
			// The record and its history at one revision.
			it.Rev, it.Record = st.Rev, st.Record
		case errors.Is(err, etcdmeta.ErrDamaged), errors.Is(err, etcdmeta.ErrNewerSchema):
			// The listed record is reported; what does not decode is in
			// its history (or the record was damaged since the listing).
			if it.Err == nil {
				k.MetaError = err.Error()
			}
		default:
			return r, err
		}
		k.History = historyReports(st.History, o.History)
		k.EtcdBytes, k.HistoryFull = &st.Bytes, st.HistoryRead >= etcdmeta.HistoryLimit
	}
	if it.Rev == 0 && it.Err == nil {
		k.Problem = "no record"
		k.Verdict = &store.VerdictReport{Reason: string(gates.Absent)}
		return r, nil
	}
	k.Layout = LayoutEtcd
	if it.Err != nil {
		k.MetaError = b.unroot(it.Err.Error())
		k.Verdict = &store.VerdictReport{Reason: string(gates.MetaUnreadable)}
		return r, nil
	}
	rec := it.Record
	k.PiVersion, k.Venue, k.ResumeChain = rec.PiVersion, rec.Venue, rec.ResumeChain
	if c := rec.Context; c != nil {
		k.Context = contextReport(c.Tokens, c.Window, c.Model)
	}
	t := rec.Transcript
	if t == nil {
		// sessdb writes no such record: nothing to resume.
		k.Verdict = &store.VerdictReport{Reason: string(gates.Absent)}
		return r, nil
	}
	at := time.Unix(0, t.PromotedAt).UTC()
	sum, size := t.CRC32C, t.Size
	k.Gen, k.LastPromotion, k.CRC32C, k.RecordBytes = t.Gen, &at, &sum, &size
	if !namesOwnFile(it.Key, t) {
		k.MetaError = recordFault(it.Key, t)
		k.Verdict = &store.VerdictReport{Reason: string(gates.MetaUnreadable)}
		return r, nil
	}
	r.File = t.File

	// A generation gone (at the open, at its first line, under Verify's
	// read): a resolve cold-starts before the ladder, the record's bytes
	// cannot be delivered.
	missing := func() (Report, error) {
		if err := shared.DirErr(b.dir); err != nil {
			return r, err // not this key's file: every key's (the walk stops)
		}
		k.Problem, k.Transcript = "its transcript "+t.File+" is missing", nil
		if o.Verify {
			k.Verify = &store.VerifyReport{Result: store.VerifyNoTranscript}
		}
		k.Verdict = &store.VerdictReport{Reason: string(gates.TranscriptReplaced)}
		*lost = true
		return r, nil
	}
	var obs gates.Observation
	mismatch := false
	if err := b.at(hookOpen, it.Key); err != nil {
		return r, err
	}
	f, err := shared.Open(b.dir, t.File)
	switch {
	case gone(err):
		return missing()
	case errors.Is(err, shared.ErrNotRegular):
		// A link, a FIFO, a directory: never followed or read.
		obs.Transcript = gates.Transcript{Exists: true}
		k.Transcript = &store.TranscriptReport{}
		if st, ok := lstatName(b.dir, t.File); ok {
			k.Transcript.Bytes, k.Transcript.ModTime = st.Size, fsat.ModTime(&st)
		}
		if o.Verify {
			k.Verify = &store.VerifyReport{Result: store.VerifyNoTranscript}
		}
	case err != nil:
		if err := shared.DirErr(b.dir); err != nil {
			return r, err
		}
		k.Problem = b.unroot(err.Error()) // no verdict: a fault
		return r, nil
	default:
		defer f.Close()
		fi, err := statGeneration(f)
		switch {
		case gone(err):
			return missing() // removed between the open and the fstat, as at either
		case err != nil:
			if err := shared.DirErr(b.dir); err != nil {
				return r, err
			}
			k.Problem = b.unroot(err.Error())
			return r, nil
		}
		mtime := fsat.InfoModTime(fi)
		obs.Transcript = gates.Transcript{Exists: true, Regular: true, Size: fi.Size(), ModTime: mtime}
		tr := &store.TranscriptReport{Regular: true, Bytes: fi.Size(), ModTime: mtime}
		var h transcript.Header
		obs.Header, h, err = b.readHeader(it.Key, f, fi.Size())
		if unreadable(err) {
			// Not a first line that does not parse: a fault, as an open
			// that fails is, or a file gone under the read (ESTALE; or
			// any failure, as under Verify's, with nothing at its name).
			if gone(err) || goneNow(b.dir, t.File) {
				return missing()
			}
			if err := shared.DirErr(b.dir); err != nil {
				return r, err
			}
			k.Problem = b.unroot(err.Error())
			return r, nil
		}
		tr.HeaderOK = obs.Header.IsSession
		if err == nil {
			tr.HeaderID, tr.HeaderVersion, tr.HeaderTimestamp = h.ID, h.Version, h.Timestamp
		}
		if obs.Header.TimestampOK {
			ts := obs.Header.Timestamp.UTC()
			tr.HeaderTime = &ts
		}
		k.Transcript = tr
		mismatch = fi.Size() != t.Size
		if o.Verify {
			if err := b.at(hookVerify, it.Key); err != nil {
				f.Close() // the tests' stand-in for a file another host removed
			}
			if k.Verify, err = store.VerifyRecorded(ctx, f, fi.Size(), t.Size, t.CRC32C, o.Bounds.MaxBytes); err != nil {
				return r, err
			}
			if k.Verify.Result == store.VerifyUnreadable && goneNow(b.dir, t.File) {
				// Removed under the read (NFS fails the reads of a file
				// another host removed, ESTALE): gone, as at the open.
				return missing()
			}
			if k.Verify.Result == store.VerifyUnreadable {
				if err := shared.DirErr(b.dir); err != nil {
					return r, err
				}
			}
			k.Verify.Detail = b.unroot(k.Verify.Detail)
			mismatch = mismatch || k.Verify.Result == store.VerifyMismatch
		}
	}
	recordInto(&obs, rec)
	var afterCopy gates.Reason
	if mismatch {
		afterCopy = gates.TranscriptReplaced // what the view's Accept makes of it
	}
	k.Verdict = store.Judge(obs, o.Bounds, o.Job, o.Now(), afterCopy)
	return r, nil
}

// goneNow reports whether the transcript name under dir is gone now.
func goneNow(dir, name string) bool {
	f, err := shared.Open(dir, name)
	if err == nil {
		f.Close()
	}
	return gone(err)
}

// lstatName is the lstat of the file name (one shared.Open refused) in
// the transcripts dir dir, through its key's directory opened without
// following a link: a link there is the key's own name, and what it
// points at, outside the dir perhaps, is nobody's to report.
func lstatName(dir, name string) (unix.Stat_t, bool) {
	key, file, _ := strings.Cut(name, "/")
	root, err := fsat.OpenDir(dir)
	if err != nil {
		return unix.Stat_t{}, false
	}
	defer root.Close()
	kd, err := fsat.OpenDirAt(root, key)
	if err != nil {
		return unix.Stat_t{}, false
	}
	defer kd.Close()
	st, err := fsat.LstatAt(kd, file)
	return st, err == nil
}

// gone reports whether err says a file is not there: removed (reaped), or
// removed by another host under an NFS client (ESTALE).
func gone(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ESTALE)
}

// unroot makes the paths in an error text relative to the transcripts
// dir, as a report names files.
func (b *Backend) unroot(s string) string {
	return strings.ReplaceAll(s, strings.TrimSuffix(b.dir, "/")+"/", "")
}

// historyReports is the newest n entries of h (oldest first), as dump
// shows a key's history.
func historyReports(h []etcdmeta.HistoryEntry, n int) []store.HistoryReport {
	if len(h) > n {
		h = h[len(h)-n:]
	}
	var out []store.HistoryReport
	for _, e := range h {
		outcome := e.Outcome
		if outcome == "" {
			outcome = string(gates.Promoted)
		}
		out = append(out, store.HistoryReport{
			Gen: e.Gen, At: time.Unix(0, e.At).UTC(), Outcome: outcome, Resumed: e.Resumed, Reason: e.Reason,
			Bytes: e.Bytes, Chain: e.Chain, Job: e.Job, Ticket: e.Ticket, BaseGen: e.BaseGen, Run: e.Run,
			TornTail: e.TornTail, Rewritten: e.Rewritten,
		})
	}
	return out
}

// contextReport is a reading as dump shows it: the percent the context
// rung compares, rounded down, when the window is positive.
func contextReport(tokens, window int64, model string) *store.ContextReport {
	c := &store.ContextReport{Tokens: tokens, Window: window, Model: model, OverWindow: window > 0 && tokens > window}
	if window > 0 && tokens >= 0 && tokens <= (1<<63-1)/100 {
		pct := tokens * 100 / window
		c.Pct = &pct
	}
	return c
}

// countEntries is n entries in English, each named by kind ("" or
// "history "): "1 entry", "2 history entries".
func countEntries(n int, kind string) string {
	noun := "entries"
	if n == 1 {
		noun = "entry"
	}
	return fmt.Sprintf("%d %s%s", n, kind, noun)
}
